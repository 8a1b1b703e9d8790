"""Replay: re-decide a recorded trajectory under another controller, with no model calls.

Each recorded step carries everything a controller reads (the whole
``Evaluation``, with ``missing`` and the memory summary, and the
``ReflectContext``: ``plan_age``, ``plan_exhausted``, ``replans``; ``dt`` is
the time since the previous step's ``time``, as the loop computes it) and the
hidden truth the oracle's probe reads at that Reflect (``progress``,
``complete``, ``feasible``, ``plan_quality``, ``effective_quality``; a run
recorded before the last has the oracle read ``plan_quality`` instead).  The
new controller is fed the steps one by one.  Under common random numbers its own run would be the
recorded one for as long as it makes the recorded decisions (the agent, the
tools and the world draw from streams that only those decisions steer, and
the controller's own state is built from the same inputs), so:

- ``same``: the trajectory is the recorded one and so is the outcome: the
  controller agreed at every step, or disagreed only at the last step of an
  episode the loop ended there whatever was decided (three invalid outputs in
  a row, or ``max_steps`` reached with a CONTINUE/REPLAN);
- ``stop``: it TERMINATEs at step ``at_step`` where the run went on; the
  outcome is judged from the recorded truth at that step, as the loop would;
- ``replan`` / ``continue``: it REPLANs or CONTINUEs where the run did
  otherwise: the trajectory diverges there and its outcome is unknown.

Exact for runs without convergence guards (a guard reviews each decision and
the record holds the decision after it) and without Reflexion retries (a later
attempt reads the memory of the earlier ones); ``exactness`` says which.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass
from typing import Any

from opar_sim.core.controller import Controller, ReflectContext, Truth, TruthReader
from opar_sim.core.outcome import INVALID_FORMAT, MAX_STEPS, TERMINATED, judge
from opar_sim.core.types import ControlSignal, Evaluation
from opar_sim.rundir import episode_key
from opar_sim.spec.schema import ExperimentSpec, SpecError
from opar_sim.traces.recorded import RecordedRun

CHECKABLE = ("same", "stop")
"""Verdicts whose outcome is known; ``replan`` and ``continue`` diverge into the unknown."""

# what a step row must hold for an exact replay (rows written before these were recorded lack them)
REPLAY_FIELDS = ("missing", "plan_age", "plan_exhausted", "replans", "complete", "feasible")

# endings of an episode whose last decision does not matter once it is not TERMINATE
# (the loop checks three invalid outputs before the signal; step max_steps is the last)
# (an error or a truncation is its own label: the judge reads no world for it)
_INVALID = judge(INVALID_FORMAT, complete=False, give_up=False, feasible=True)
_MAX_STEPS = judge(MAX_STEPS, complete=False, give_up=False, feasible=True)


@dataclass(frozen=True, slots=True)
class ReplayedEpisode:
    """What the new controller would have done with one recorded episode."""

    episode: int
    recorded_controller: str
    recorded_outcome: str
    recorded_steps: int
    verdict: str  # same | stop | replan | continue
    at_step: int | None
    outcome: str | None  # the outcome under the new controller, when it is known

    @property
    def checkable(self) -> bool:
        """Whether the outcome is known (``same`` or ``stop``), so a real run can check it."""
        return self.verdict in CHECKABLE

    def to_dict(self) -> dict[str, Any]:
        """The fields as a JSON-ready mapping."""
        return asdict(self)


def evaluation_of(row: dict[str, Any]) -> Evaluation:
    """The Evaluation the controller read at a recorded step, rebuilt from its row.

    Args:
        row: A steps.jsonl row.

    Returns:
        The evaluation, field for field (``missing`` as a tuple, ``memory`` as the update).
    """
    return Evaluation(
        float(row["delta_task"]),
        float(row["delta_act"]),
        float(row["delta_plan"]),
        float(row["confidence"]),
        str(row["critique"] or ""),
        tuple(str(m) for m in row["missing"]),
        row.get("memory"),  # a batch run's rows have none (no memory compression)
    )


def context_of(row: dict[str, Any], previous_time: float | None) -> ReflectContext:
    """The ReflectContext the loop built at a recorded step.

    Args:
        row: A steps.jsonl row.
        previous_time: The ``time`` of the episode's previous step (its Reflect), or None
            on the first step.

    Returns:
        The context; ``dt`` is computed as the loop does (now − last Reflect, 0 at first).
    """
    now = float(row["time"])
    return ReflectContext(
        step=int(row["step"]),
        now=now,
        dt=0.0 if previous_time is None else now - previous_time,
        plan_age=int(row["plan_age"]),
        plan_exhausted=bool(row["plan_exhausted"]),
        replans=int(row["replans"]),
    )


def truth_of(row: dict[str, Any]) -> Truth:
    """The hidden state the truth probe read at a recorded step.

    A live agent's record (``opar_sim.runtime``) has no plan quality: 0 stands in for it,
    and ``replay_episode`` refuses a law that would read it (the oracle).
    """
    return Truth(
        float(row["progress"]),
        bool(row["complete"]),
        bool(row["feasible"]),
        float(row.get("plan_quality", 0.0)),
        None if row.get("effective_quality") is None else float(row["effective_quality"]),
    )


def replay_episode(
    rows: list[dict[str, Any]], episode: dict[str, Any], controller: Controller
) -> ReplayedEpisode:
    """Feed one episode's recorded steps to ``controller`` until it disagrees.

    Args:
        rows: The episode's top-level steps, in step order.
        episode: The episode's episodes.jsonl row.
        controller: The controller to replay (reset here).

    Returns:
        The verdict, with the step of the first disagreement and the outcome when known.

    Raises:
        SpecError: when a step row lacks a field the replay needs (written before it
            was recorded).
    """
    controller.reset()
    state: dict[str, Truth] = {}
    if isinstance(controller, TruthReader):  # the oracle reads the recorded ground truth
        if rows and "plan_quality" not in rows[0]:
            raise SpecError(
                f"episode {episode['episode']} records no hidden plan quality (a live agent's "
                f"run): {controller.name} cannot replay on it"
            )
        controller.bind_truth(lambda: state["truth"])
    recorded_outcome = str(episode["outcome"])

    def verdict(name: str, at_step: int | None, outcome: str | None) -> ReplayedEpisode:
        return ReplayedEpisode(
            int(episode["episode"]),
            str(episode["controller"]),
            recorded_outcome,
            len(rows),
            name,
            at_step,
            outcome,
        )

    previous_time: float | None = None
    for index, row in enumerate(rows):
        absent = [name for name in REPLAY_FIELDS if name not in row]
        if absent:
            raise SpecError(
                f"step {row.get('step')} of episode {episode['episode']} lacks "
                f"{', '.join(absent)}: recorded before exact replay; re-run to replay it"
            )
        ctx = context_of(row, previous_time)
        previous_time = ctx.now
        state["truth"] = truth_of(row)
        decision = controller.decide(evaluation_of(row), ctx)
        signal = decision.signal
        same_claim = decision.give_up == bool(row.get("give_up", False))
        if signal.value == row["signal"] and (signal is not ControlSignal.TERMINATE or same_claim):
            continue
        last = index == len(rows) - 1
        if last and recorded_outcome == _INVALID:
            return verdict("same", None, recorded_outcome)  # the loop ends here whatever
        if signal is ControlSignal.TERMINATE:
            return verdict("stop", ctx.step, _stop_outcome(state["truth"], decision.give_up))
        if last and recorded_outcome == _MAX_STEPS:
            return verdict("same", None, recorded_outcome)  # no step follows the last one
        return verdict(signal.value, ctx.step, None)
    return verdict("same", None, recorded_outcome)


def _stop_outcome(truth: Truth, give_up: bool) -> str:
    """The outcome of a TERMINATE at a recorded step, from the kernel's judge (as the loop's).

    Args:
        truth: The recorded ground truth at the step.
        give_up: Whether the TERMINATE gives up rather than claims completion.

    Returns:
        ``success`` when the task is complete; else ``abandoned``/``gave_up`` for a
        give-up on a feasible/infeasible task, ``premature`` for a false claim.
    """
    return judge(TERMINATED, truth.complete, give_up, truth.feasible)


def exactness(spec: ExperimentSpec) -> str | None:
    """Why replay verdicts on a run of ``spec`` are not exact, or None when they are.

    Args:
        spec: The recorded run's spec.

    Returns:
        A one-line reason (convergence guards, Reflexion retries), or None.
    """
    reasons = []
    if spec.guards.enabled():
        reasons.append("convergence guards reviewed the recorded decisions (not replayed)")
    if spec.reflexion.attempts > 1:
        reasons.append("later Reflexion attempts read the memory of the earlier ones")
    return "; ".join(reasons) or None


def replay(run: RecordedRun, make_controller: Any) -> list[ReplayedEpisode]:
    """Replay every recorded episode under a fresh controller from ``make_controller()``.

    Args:
        run: The recorded run, with its steps.
        make_controller: Called once per episode for a fresh controller.

    A controller that plans with the spec's model (``ModelReader``) is handed the
    recorded spec's model, as the build hands it to the live run.

    Returns:
        One verdict per recorded episode, in the order of episodes.jsonl.
    """
    from opar_sim.core.controller import ModelReader
    from opar_sim.spec.build import model_info

    grouped = run.episode_steps()
    model = None
    out = []
    for episode in run.episodes:
        rows = grouped.get(episode_key(episode), [])
        controller = make_controller()
        if isinstance(controller, ModelReader) and run.spec is not None:
            model = model if model is not None else model_info(run.spec)
            controller.bind_model(model)
        out.append(replay_episode(rows, episode, controller))
    return out


def tally(replayed: list[ReplayedEpisode]) -> dict[str, Counter[str]]:
    """Counts of verdicts, of outcomes where they are known, and of checkable verdicts."""
    return {
        "verdicts": Counter(r.verdict for r in replayed),
        "outcomes": Counter(r.outcome or "unknown (diverged)" for r in replayed),
        "recorded": Counter(r.recorded_outcome for r in replayed),
        "checkable": Counter("checkable" if r.checkable else "uncheckable" for r in replayed),
    }
