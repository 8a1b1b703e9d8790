"""The domain types of the OPAR loop.

The hot path (one object per phase per step, hundreds of thousands per second
in a sweep) uses slotted dataclasses, and the records made every step
(observation, result, evaluation, decision) are not frozen: a frozen
dataclass pays an ``object.__setattr__`` per field, about three times the
cost of building it (they still hash by value, ``unsafe_hash``, as they did
frozen; nothing changes them after they are made); pydantic is kept for the boundaries
(experiment specs, LLM structured outputs, files on disk).  Field names follow
the OPAR document: an episode's trajectory is τ = ⟨o, π, a, r, ρ⟩ per step.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any


class ControlSignal(enum.Enum):
    """What the Reflect phase tells the loop to do next (Algorithm 1, lines 28-35)."""

    CONTINUE = "continue"
    REPLAN = "replan"
    TERMINATE = "terminate"


@dataclass(slots=True, unsafe_hash=True)
class Observation:
    """What the agent perceives at the start of a step (o_t).

    ``visible_progress`` is the progress the agent could infer from what it has
    seen so far; it differs from the task's hidden progress whenever results
    were truncated, stale or wrong.  ``world_changed`` is set when the agent
    can tell the world moved since the plan was made (a fare changed, a
    document vanished).
    """

    text: str
    visible_progress: float
    world_changed: bool = False
    tokens: int = 0


@dataclass(slots=True, frozen=True)
class PlanStep:
    """One step of a plan skeleton: a tool to use, why, and an optional branch.

    ``condition``/``fallback`` express the OPAR document's conditional plans:
    "if the search is empty, widen the date range".
    """

    tool: str
    description: str
    condition: str | None = None
    fallback: str | None = None


@dataclass(slots=True)
class Plan:
    """A plan π with a cursor into its steps.

    ``quality`` is hidden from the agent and from every controller except the
    oracle: the probability that a step of this plan is the expert's action.
    """

    plan_id: int
    steps: tuple[PlanStep, ...]
    quality: float
    created_step: int
    critique: str = ""
    cursor: int = 0

    @property
    def exhausted(self) -> bool:
        """Whether the cursor has passed the plan's last step."""
        return self.cursor >= len(self.steps)


@dataclass(slots=True, frozen=True)
class Action:
    """A concrete tool call a_t."""

    tool: str
    args: tuple[tuple[str, Any], ...] = ()

    @staticmethod
    def of(tool: str, **args: Any) -> Action:
        """Build a call of ``tool`` from keyword arguments (stored sorted by name)."""
        return Action(tool, tuple(sorted(args.items())))

    def arg(self, name: str, default: Any = None) -> Any:
        """The value of argument ``name``, or ``default`` when the call has none."""
        for key, value in self.args:
            if key == name:
                return value
        return default

    def label(self) -> str:
        """The compact form used in records and logs: ``tool(k=v,...)``, or just ``tool``."""
        if not self.args:
            return self.tool
        inner = ",".join(f"{k}={v}" for k, v in self.args)
        return f"{self.tool}({inner})"


@dataclass(slots=True, unsafe_hash=True)
class ActionResult:
    """The raw result r_t of executing an action in simulated time."""

    ok: bool
    text: str
    latency: float
    error: str | None = None  # "failure", "timeout", "invalid_action", "rejected", ...
    tokens: int = 0


@dataclass(slots=True, unsafe_hash=True)
class Evaluation:
    """The sensor reading of Algorithm 2: the agent's assessment after acting."""

    delta_task: float  # estimated progress toward the goal, in [0, 1]
    delta_act: float  # did the last action do what was expected, in [0, 1]
    delta_plan: float  # how far the world has drifted from the plan, in [0, 1]
    confidence: float  # in [0, 1]
    critique: str = ""
    missing: tuple[str, ...] = ()  # what information is still missing (ReAct reflection)
    memory_update: str | None = None  # Algorithm 2 step 2.5: the summary made this Reflect


@dataclass(slots=True, unsafe_hash=True)
class Decision:
    """A controller's verdict: the signal, why, and the controller's terms.

    A TERMINATE either claims the goal is reached (``give_up`` False, the
    default) or gives up on it (``give_up`` True: "this cannot be done").  The
    outcome of the episode is judged from that claim and the ground truth
    (``Outcome``).  ``give_up`` is only meaningful on a TERMINATE; a guard that
    overrides a decision keeps it while the signal stays TERMINATE and drops it
    otherwise, and a guard that turns a CONTINUE or REPLAN into a TERMINATE
    claims completion.
    """

    signal: ControlSignal
    reason: str
    terms: dict[str, float] = field(default_factory=dict)
    give_up: bool = False


class Outcome(enum.Enum):
    """Outcome kinds (docs/design.md §2); truncations and errors carry a reason.

    Every engine judges an episode through ``opar_sim.core.outcome.judge``
    (its array form for the batch engine).  A TERMINATE is judged from the
    world's state first and the controller's claim second (``Decision.give_up``):

    ============  ==========================================================
    ``success``    TERMINATE and the task is truly complete — whatever the
                   claim: a give-up on a task that is in fact done still
                   hands over a complete answer, and the world's final state
                   is what a benchmark checks (τ-bench); steps.jsonl keeps the
                   claim (``give_up``) for whoever wants to count those apart
    ``premature``  claimed completion, task not complete, feasible or not
    ``gave_up``    gave up on an infeasible task (correct abandonment)
    ``abandoned``  gave up on a feasible task that is not complete (false
                   abandonment)
    ============  ==========================================================
    """

    SUCCESS = "success"
    PREMATURE = "premature"
    GAVE_UP = "gave_up"
    ABANDONED = "abandoned"
    TRUNCATED = "truncated"
    ERROR = "error"


TRUNCATION_REASONS = ("max_steps", "time", "tokens", "no_progress", "stuck", "token_spike")


def outcome_label(kind: Outcome, reason: str | None = None) -> str:
    """The string form used in files: ``success`` or ``truncated:max_steps``."""
    if kind in (Outcome.TRUNCATED, Outcome.ERROR):
        if not reason:
            raise ValueError(f"{kind.value} outcome needs a reason")
        return f"{kind.value}:{reason}"
    return str(kind.value)


@dataclass(slots=True)
class Cost:
    """What an episode spent."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    llm_calls: int = 0
    sim_seconds: float = 0.0
    tool_calls: int = 0
    replans: int = 0
    # LLM agents only: the measured wall seconds of the model calls, beside the simulated
    # seconds (which come from token counts); None for agents that call no real model
    wall_seconds: float | None = None

    @property
    def tokens(self) -> int:
        """Prompt plus completion tokens spent so far."""
        return self.prompt_tokens + self.completion_tokens


@dataclass(slots=True)
class StepRecord:
    """One iteration of the loop: ⟨o, π, a, r, ρ⟩ plus ground truth and cost."""

    step: int
    time: float  # simulated seconds at the end of the step
    observation: Observation
    plan_id: int
    plan_quality: float
    action: Action | None
    expert: bool  # was the action the expert's (ground truth, hidden from the agent)
    result: ActionResult | None
    evaluation: Evaluation | None
    decision: Decision | None
    progress: float  # true hidden progress after the action
    tokens: int  # cumulative tokens at the end of the step
    context_tokens: int
    answer: str
    error: str | None = None  # a step-level error such as "invalid_format"
    guard: str | None = None  # the supervisor guard that overrode the controller, if any
    memory: str | None = None  # memory compression at this Reflect (Algorithm 2, step 2.5)
    intercepted: str | None = None  # why a guardrail stopped this step's high-risk call
    # what the controller was told besides the evaluation (ReflectContext; dt is the
    # time since the previous step's ``time``)
    plan_age: int = 0
    plan_exhausted: bool = False
    replans: int = 0
    # the hidden truth at the Reflect, as the truth probe read it (feasibility can
    # change within an episode: fares rise, a budget runs out)
    complete: bool = False
    feasible: bool = True
    # the plan's effective quality at the Reflect (context decay included), as the
    # agent reported it to the truth probe (``plan_quality`` when it cannot)
    effective_quality: float = 0.0


@dataclass(slots=True)
class EpisodeResult:
    """Everything an episode produced: outcome, answer, cost and trajectory."""

    episode: int
    seed: int
    task: str
    agent: str
    controller: str
    outcome: str
    answer: str
    final_progress: float
    complete: bool
    cost: Cost
    steps: list[StepRecord]
    best_step: int | None = None  # the step whose answer was returned (best-of-history)
    sub_episodes: list[EpisodeResult] = field(default_factory=list)
    attempt: int = 1  # Reflexion: which attempt at the same seeded task this was
    trial: int | None = None  # which repeated trial of the world (None: the spec runs one)
    feasible: bool = True  # ground truth at the end: could the goal still be met
    task_features: dict[str, float] | None = None  # the world's known features, if the task has

    @property
    def success(self) -> bool:
        """Whether the outcome is ``success`` (TERMINATE with the goal met)."""
        return self.outcome == Outcome.SUCCESS.value
