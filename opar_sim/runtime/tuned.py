"""A gate from a tuning directory: the law and gains ``opar-sim tune`` recommends.

``best.toml`` holds the recommended gains (or the spec's current ones, when nothing beat
them on held-out episodes: its comment says which) as ``[controller.params]``;
``tune_setup.json`` beside it holds the spec that was tuned, which names the law.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

from opar_sim.rundir import read_input
from opar_sim.runtime.gate import Gate
from opar_sim.runtime.laws import LawError
from opar_sim.spec.build import parse_spec
from opar_sim.spec.schema import ExperimentSpec


def tuned_law(path: str | Path) -> tuple[str, dict[str, Any], ExperimentSpec | None]:
    """The law, its tuned parameters and the tuned spec, from a tuning directory.

    Args:
        path: The tuning directory (``tune --out``), or its ``best.toml``.

    Returns:
        (law name, parameters, the spec that was tuned; None without tune_setup.json).

    Raises:
        LawError: no best.toml, or no law named anywhere.
    """
    p = Path(path)
    best = p if p.suffix == ".toml" else p / "best.toml"
    if not best.is_file():
        raise LawError(f"{best}: no best.toml (write one with `opar-sim tune SPEC --out DIR`)")
    try:
        data = tomllib.loads(read_input(best).decode())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise LawError(f"{best}: not TOML ({exc})") from None
    params = dict(data.get("controller", {}).get("params", {}))
    setup_file = best.parent / "tune_setup.json"
    spec = None
    if setup_file.is_file():
        setup = json.loads(read_input(setup_file))
        spec = parse_spec(setup["spec"], str(setup_file))
    name = data.get("controller", {}).get("name") or (spec.controller.name if spec else None)
    if not name:
        raise LawError(f"{best}: names no law and has no tune_setup.json beside it")
    base = dict(spec.controller.params) if spec is not None else {}
    return str(name), base | params, spec


def load_tuned(path: str | Path, **options: Any) -> Gate:
    """A gate running the law and gains of a tuning directory.

    Args:
        path: The tuning directory or its ``best.toml``.
        **options: The gate's options (``time_unit``, ``replan``, ``evaluator``, ...).

    Returns:
        The gate.
    """
    name, params, _ = tuned_law(path)
    return Gate(name, params, **options)
