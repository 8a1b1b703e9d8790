"""Replay: re-decide a recorded trajectory under another controller, with no model calls.

The recorded evaluations are fed, step by step, to the new controller.  As
long as it agrees with the recorded decisions the trajectory is the same; at
the first disagreement the replay stops, because what follows would differ:

- ``stop``: the new controller TERMINATEs where the run went on; the outcome
  it would have had is judged, as the loop judges it, from the recorded ground
  truth at that step (progress, the episode's feasibility) and the new
  decision's claim (completion or give-up);
- ``replan`` / ``continue``: it REPLANs or CONTINUEs where the run did
  otherwise: the trajectory diverges there and its outcome is unknown;
- ``same``: it agreed at every step, so the outcome is the recorded one.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass
from typing import Any

from opar_sim.analysis.recorded import RecordedRun
from opar_sim.core.controller import Controller, ReflectContext, Truth, TruthReader
from opar_sim.core.types import ControlSignal, Evaluation
from opar_sim.experiment.rundir import episode_key


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

    def to_dict(self) -> dict[str, Any]:
        """The fields as a JSON-ready mapping."""
        return asdict(self)


def replay_episode(
    rows: list[dict[str, Any]], episode: dict[str, Any], controller: Controller
) -> ReplayedEpisode:
    """Feed one episode's recorded evaluations to ``controller`` until it disagrees."""
    controller.reset()
    feasible = _feasible(episode)
    last_time: float | None = None
    plan_id: int | None = None
    plan_age = replans = 0
    state: dict[str, Truth] = {}
    if isinstance(controller, TruthReader):  # the oracle reads the recorded ground truth
        controller.bind_truth(lambda: state["truth"])

    def verdict(name: str, at_step: int | None, outcome: str | None) -> ReplayedEpisode:
        return ReplayedEpisode(
            int(episode["episode"]),
            str(episode["controller"]),
            str(episode["outcome"]),
            len(rows),
            name,
            at_step,
            outcome,
        )

    for row in rows:
        if plan_id is not None and row["plan_id"] != plan_id:
            replans += 1
            plan_age = 0
        plan_id = row["plan_id"]
        plan_age += 1
        if row["delta_task"] is None or row["signal"] is None:
            continue
        now = float(row["time"])
        progress = float(row["progress"])
        ctx = ReflectContext(
            step=int(row["step"]),
            now=now,
            dt=0.0 if last_time is None else now - last_time,
            plan_age=plan_age,
            plan_exhausted=False,  # not recorded; no built-in controller's verdict hinges on it
            replans=replans,
        )
        state["truth"] = Truth(progress, progress >= 1.0, feasible, float(row["plan_quality"]))
        last_time = now
        evaluation = Evaluation(
            float(row["delta_task"]),
            float(row["delta_act"]),
            float(row["delta_plan"]),
            float(row["confidence"]),
            str(row["critique"] or ""),
        )
        decision = controller.decide(evaluation, ctx)
        signal = decision.signal
        if signal.value == row["signal"]:
            continue
        step = int(row["step"])
        if signal is ControlSignal.TERMINATE:
            outcome = _stop_outcome(progress, feasible, decision.give_up)
            return verdict("stop", step, outcome)
        return verdict(signal.value, step, None)
    return verdict("same", None, str(episode["outcome"]))


def _feasible(episode: dict[str, Any]) -> bool:
    """The episode's recorded feasibility; runs from before it was recorded guess it.

    Before schema 2 only a ``gave_up`` outcome said the task was infeasible (an
    infeasible task stopped any other way left no trace), so the guess errs
    toward feasible.
    """
    if "feasible" in episode:
        return bool(episode["feasible"])
    return bool(episode["outcome"] != "gave_up")


def _stop_outcome(progress: float, feasible: bool, give_up: bool) -> str:
    """The outcome of a TERMINATE at ``progress``: the loop's rule (``Outcome``)."""
    if progress >= 1.0:
        return "success"
    if give_up:
        return "abandoned" if feasible else "gave_up"
    return "premature"


def replay(run: RecordedRun, make_controller: Any) -> list[ReplayedEpisode]:
    """Replay every recorded episode under a fresh controller from ``make_controller()``.

    Args:
        run: The recorded run, with its steps.
        make_controller: Called once per episode for a fresh controller.

    Returns:
        One verdict per recorded episode, in the order of episodes.jsonl.
    """
    grouped = run.episode_steps()
    out = []
    for episode in run.episodes:
        rows = grouped.get(episode_key(episode), [])
        out.append(replay_episode(rows, episode, make_controller()))
    return out


def tally(replayed: list[ReplayedEpisode]) -> dict[str, Counter[str]]:
    """Counts of verdicts, and of outcomes where they are known."""
    return {
        "verdicts": Counter(r.verdict for r in replayed),
        "outcomes": Counter(r.outcome or "unknown (diverged)" for r in replayed),
        "recorded": Counter(r.recorded_outcome for r in replayed),
    }
