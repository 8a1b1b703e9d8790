"""opar-sim: a control-theory workbench for agent loops.

The loop is Observe → Plan → Act → Reflect; the Reflect phase is a pluggable
controller emitting ``ControlSignal.CONTINUE``, ``REPLAN`` or ``TERMINATE``.

The Python API (``opar_sim.run``, ``opar_sim.compare``, ``opar_sim.load_run``,
``opar_sim.Run``) lives in ``opar_sim.api`` and is loaded on first use: this
package's own import stays the kernel's types only (``tests/core/test_layout.py``).
"""

import importlib
from typing import TYPE_CHECKING, Any

from opar_sim.core.types import (
    Action,
    ActionResult,
    ControlSignal,
    Cost,
    Decision,
    EpisodeResult,
    Evaluation,
    Observation,
    Outcome,
    Plan,
    PlanStep,
    StepRecord,
)

__version__ = "0.1.0"

_API = frozenset({"run", "compare", "load_run", "Run"})

if TYPE_CHECKING:  # for type checkers only; at run time ``__getattr__`` loads the API
    from opar_sim.api import Run, compare, load_run, run


def __getattr__(name: str) -> Any:
    """Load the Python API (``opar_sim.api``) when one of its names is first used."""
    if name in _API:
        return getattr(importlib.import_module("opar_sim.api"), name)
    raise AttributeError(f"module 'opar_sim' has no attribute {name!r}")


__all__ = [
    "Action",
    "ActionResult",
    "ControlSignal",
    "Cost",
    "Decision",
    "EpisodeResult",
    "Evaluation",
    "Observation",
    "Outcome",
    "Plan",
    "PlanStep",
    "Run",
    "StepRecord",
    "__version__",
    "compare",
    "load_run",
    "run",
]
