"""The Controller protocol: a Reflect decision law, one instance per episode.

A controller reads the agent's evaluation and what the loop tells it
(``ReflectContext``: simulated time, plan age, replans) and emits a
``Decision``.  The hidden ground truth is not in the context: a law that is
declared to need it (the oracle) implements ``TruthReader`` and is handed a
``TruthProbe`` by the loop.  A law that plans with the experiment's own
generative model (``bayes``, the Bayes decision on an approximate model of the
loop) implements ``ModelReader`` and is handed the ``ModelInfo`` of its spec
when it is built: the parameters of the model, never the hidden state of an
episode.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from opar_sim.core.types import Decision, Evaluation


@dataclass(slots=True, unsafe_hash=True)  # not frozen: built every step (see core.types)
class Truth:
    """Hidden ground truth; only the oracle controller may read it.

    ``plan_quality`` is the plan's drawn quality; ``effective_quality`` the chance
    the agent's next step is the expert's action given what it has lost since
    (context decay, memory summaries), as the agent reports it
    (``ReportsEffectiveQuality``).  ``None`` when it was not read (a truth built
    by hand, a replay of a run recorded before the field): read ``quality``.
    """

    progress: float
    complete: bool
    feasible: bool
    plan_quality: float
    effective_quality: float | None = None

    @property
    def quality(self) -> float:
        """The effective quality when it was read, else the plan's drawn quality."""
        return self.plan_quality if self.effective_quality is None else self.effective_quality


@dataclass(slots=True, unsafe_hash=True)  # not frozen: built every step (see core.types)
class ReflectContext:
    """What a controller is told besides the evaluation.

    ``now`` and ``dt`` are simulated seconds (never wall-clock); ``dt`` is the
    time since the previous Reflect (0 on the first).
    """

    step: int
    now: float
    dt: float
    plan_age: int  # steps taken under the current plan, this one included (>= 1)
    plan_exhausted: bool
    replans: int


@runtime_checkable
class Controller(Protocol):
    """A Reflect decision law: evaluations in, CONTINUE/REPLAN/TERMINATE out."""

    name: str

    def reset(self) -> None:
        """Forget everything: back to the state it was built in."""
        ...

    def decide(self, evaluation: Evaluation, ctx: ReflectContext) -> Decision:
        """Turn one evaluation into a decision with its reason and terms."""
        ...


TruthProbe = Callable[[], "Truth"]
"""Reads the hidden ground truth now; handed only to what declares it needs it."""


@runtime_checkable
class TruthReader(Protocol):
    """A part that is declared to read the hidden state (the oracle, a human approver)."""

    def bind_truth(self, probe: TruthProbe) -> None:
        """Receive the probe of the episode about to run."""
        ...


@dataclass(slots=True, frozen=True)
class ModelInfo:
    """What an experiment knows of its own generative model, for a law that plans with it.

    Every field is a parameter of the spec (with the component's defaults filled
    in), the same for every episode: nothing of an episode's hidden state.

    Attributes:
        task: The task's registered name.
        agent_kind: The agent's registered kind (``"simulated"``).
        max_steps: The step limit.
        token_budget: The token limit.
        time_budget: The simulated-time limit, seconds.
        agent: Every parameter of the agent (defaults included).
        task_params: Every parameter of the task (defaults included; nested tables as mappings).
        objective: The tuner's objective weights (``failure``, ``tokens``, ``replan_rate``).
    """

    task: str
    agent_kind: str
    max_steps: int
    token_budget: int
    time_budget: float
    agent: Mapping[str, Any] = field(default_factory=dict)
    task_params: Mapping[str, Any] = field(default_factory=dict)
    objective: Mapping[str, float] = field(default_factory=dict)


@runtime_checkable
class ModelReader(Protocol):
    """A law that plans with the experiment's generative model (handed it once, when built)."""

    def bind_model(self, model: ModelInfo) -> None:
        """Receive the model parameters of the spec the law runs in."""
        ...


@runtime_checkable
class Cautious(Protocol):
    """A law whose guarantee holds only where it was fitted: it says where it runs outside.

    ``cautions`` is asked once, when the spec is built; each line it returns is
    printed beside the run's results (the law still runs).
    """

    def cautions(self, model: ModelInfo) -> list[str]:
        """Why the law's numbers may not hold in the spec described by ``model`` (or [])."""
        ...
