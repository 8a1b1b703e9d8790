"""Measuring ``sprt``: its false-abandon curve, its token saving, and the study that runs both.

The calibration (``opar_sim.studies.sprt_calibration``, re-exported here) fits the law's
likelihood tables and boundaries on tuning episodes.  The measurement runs the calibrated
law on evaluation episodes: ``abandon_curve`` is the share of feasible episodes given up by
step t, with its Clopper–Pearson band; ``token_saving`` pairs it against another law on
the same seeds.

``sprt_study(spec, budget, executor)`` runs the whole protocol: calibrate on the tuning
seed, then measure the calibrated agent, agents whose bias is shifted below and above it,
and ``threshold``, on the hold-out seed.  Its ``SPRTStudy`` result's ``table()`` is the
command's table and ``to_dict()`` its ``sprt.json``.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from opar_sim.agents.simulated import SimulatedAgentParams
from opar_sim.core.types import EpisodeResult, Outcome
from opar_sim.measure.exact_intervals import clopper_pearson
from opar_sim.measure.stats import Estimate, paired_interval
from opar_sim.measure.table import TextTable
from opar_sim.running.executors import ExecutorConfig, open_executor
from opar_sim.running.runner import simulate
from opar_sim.spec.schema import ExperimentSpec, SpecError
from opar_sim.studies.seeds import HOLDOUT_SEED, TUNING_SEED
from opar_sim.studies.sprt_calibration import (
    Calibration,
    calibrate,
    done_boundary,
    pac_boundary,
    with_controller,
)

EVALUATION_SEED = HOLDOUT_SEED  # measurement episodes: seen by no calibration


@dataclass(frozen=True, slots=True)
class Row:
    """What the measurement keeps of an episode (small enough to send between processes)."""

    outcome: str
    steps: int
    tokens: int
    success: bool
    feasible: bool  # at its first step


def row_of(result: EpisodeResult) -> Row:
    """The measurement's row of an episode."""
    first = result.steps[0] if result.steps else None
    return Row(
        result.outcome,
        len(result.steps),
        result.cost.tokens,
        result.success,
        first is None or first.feasible,
    )


def run_arm(spec_json: str, episodes: int, seed: int, start: int = 0) -> list[Row]:
    """The rows of episodes start..start + episodes − 1; module-level for a process pool."""
    spec = ExperimentSpec.model_validate_json(spec_json)
    return [row_of(r) for r in simulate(spec, episodes, seed, start)]


@dataclass
class AbandonCurve:
    """The share of feasible episodes falsely given up by step t, t = 1..T."""

    label: str
    bias: float
    episodes: int
    feasible: int  # the null population: episodes feasible at their first step
    by_step: list[int]  # cumulative false abandons by step t
    outcomes: dict[str, int]
    false_completions: int

    def share(self) -> list[float]:
        """The curve: false abandons by step t over feasible episodes."""
        return [k / self.feasible for k in self.by_step]

    def band(self) -> list[tuple[float, float]]:
        """The 95 % Clopper–Pearson band of the curve, step by step."""
        return [clopper_pearson(k, self.feasible) for k in self.by_step]

    def summary(self) -> dict[str, Any]:
        """Maximum share, its step, its band and the final counts (JSON-ready)."""
        share = self.share()
        t = int(np.argmax(share)) if share else 0
        low, high = self.band()[t] if share else (0.0, 0.0)
        return {
            "label": self.label,
            "bias": self.bias,
            "episodes": self.episodes,
            "feasible": self.feasible,
            "max_share": share[t] if share else 0.0,
            "max_step": t + 1,
            "max_band": [low, high],
            "max_upper": max((h for _, h in self.band()), default=0.0),
            "false_abandons": self.by_step[-1] if self.by_step else 0,
            "false_completions": self.false_completions,
            "false_completion_share": self.false_completions / self.episodes,
            "outcomes": self.outcomes,
        }


def abandon_curve(
    results: Sequence[Row], horizon: int, label: str = "", bias: float = 0.0
) -> AbandonCurve:
    """Count false abandons (outcome ``abandoned``) by the step they happened at.

    Args:
        results: Rows of one law's episodes (``row_of``).
        horizon: The last step of the curve (the spec's ``max_steps``).
        label: A name for the curve.
        bias: The agent's bias, recorded.

    Returns:
        The curve over feasible episodes.
    """
    at = np.zeros(horizon + 1, dtype=int)
    feasible = 0
    outcomes: dict[str, int] = {}
    premature = 0
    for r in results:
        outcomes[r.outcome] = outcomes.get(r.outcome, 0) + 1
        feasible += r.feasible
        premature += r.outcome == Outcome.PREMATURE.value
        if r.outcome == Outcome.ABANDONED.value:
            at[min(horizon, r.steps)] += 1
    cumulative = np.cumsum(at)[1:]
    return AbandonCurve(
        label,
        bias,
        len(results),
        max(feasible, 1),
        [int(x) for x in cumulative],
        dict(sorted(outcomes.items())),
        premature,
    )


def token_saving(base: Sequence[Row], law: Sequence[Row], seed: int = 0) -> dict[str, Any]:
    """Tokens ``base`` spends minus ``law``'s, paired, on the episodes ``base`` fails.

    Args:
        base: Rows of the reference law (``threshold``), on the same seeds as ``law``.
        law: Rows of ``sprt``.
        seed: The bootstrap's seed.

    Returns:
        The number of failing episodes, each law's mean tokens there and the paired
        difference (base − law) with its 95 % bootstrap interval.
    """
    pairs = [(a.tokens, b.tokens) for a, b in zip(base, law, strict=True) if not a.success]
    if not pairs:
        return {"failing": 0}
    a_tokens = [float(a) for a, _ in pairs]
    b_tokens = [float(b) for _, b in pairs]
    est: Estimate = paired_interval(a_tokens, b_tokens, np.random.default_rng(seed))
    return {
        "failing": len(pairs),
        "base_tokens": float(np.mean(a_tokens)),
        "law_tokens": float(np.mean(b_tokens)),
        "saving": est.mean,
        "saving_ci95": [est.low, est.high],
        "saving_share": est.mean / float(np.mean(a_tokens)),
    }


@dataclass(frozen=True)
class SPRTBudget:
    """What the study may spend: evaluation episodes per agent, and tuning episodes."""

    episodes: int = 20000  # per agent (and for ``threshold``), on the hold-out seed
    calibration: int = 5000  # on the tuning seed (unused when the parameters are given)


@dataclass
class SPRTStudy:
    """The sprt study: its calibration, each agent's false-abandon curve, the token saving."""

    source: str  # how the JSON names the spec
    name: str  # the spec's name
    calibration: Calibration
    curves: list[AbandonCurve]  # the calibrated agent, then bias shifted down and up
    success: dict[str, float]  # by curve label, and "threshold"
    saving: dict[str, Any]  # ``token_saving`` of threshold against the calibrated agent
    beta: float
    episodes: int
    wall_seconds: float

    def to_dict(self) -> dict[str, Any]:
        """``sprt.json``: the calibration, every agent's curve and summary, the saving."""
        cal = self.calibration
        return {
            "spec": self.source,
            "calibration": {
                "seed": cal.seed,
                "episodes": cal.episodes,
                "feasible_episodes": cal.feasible_episodes,
                "params": cal.params,
                "act_counts": cal.act_counts,
                "done_counts": cal.done_counts,
            },
            "evaluation_seed": EVALUATION_SEED,
            "agents": [c.summary() | {"success": self.success[c.label]} for c in self.curves],
            "curves": {c.label: {"share": c.share(), "band": c.band()} for c in self.curves},
            "token_saving_vs_threshold": self.saving,
            "threshold_success": self.success["threshold"],
            "wall_seconds": self.wall_seconds,
        }

    def table(self) -> TextTable:
        """Per agent: success, the curve's maximum with its band, false completions."""
        return sprt_table(self.to_dict(), self.beta)

    def figure_curves(self) -> dict[str, tuple[list[float], list[tuple[float, float]]]]:
        """Per agent: the false-abandon curve and its band (what the figure draws)."""
        return {c.label: (c.share(), c.band()) for c in self.curves}


def require_simulated(spec: ExperimentSpec) -> None:
    """Refuse a spec whose agent is not the simulated one (its bias is what the study shifts).

    Raises:
        SpecError: for any other agent.
    """
    if spec.agent.kind != "simulated":
        raise SpecError("sprt: the spec's agent must be the simulated one")


def sprt_study(
    spec: ExperimentSpec,
    budget: SPRTBudget = SPRTBudget(),
    executor: ExecutorConfig | None = None,
    *,
    alpha: float = 0.05,
    beta: float = 0.05,
    shift: float = 0.2,
    params: Mapping[str, Any] | None = None,
    source: str | None = None,
) -> SPRTStudy:
    """Calibrate ``sprt`` on tuning episodes, then measure its error rates and token saving.

    Each of the four arms (three agents and ``threshold``) is cut into episode ranges so
    that more workers than arms stay busy; the rows do not depend on the cut.

    Args:
        spec: A spec with the simulated agent (its task, agent and limits).
        budget: Evaluation episodes per agent and tuning episodes.
        executor: Where the arms run (None: serially, in this process).
        alpha: The false-completion rate asked for.
        beta: The false-abandon rate asked for (also the table's pass mark).
        shift: The bias shift of the other two agents, below and above the spec's.
        params: ``sprt``'s parameters calibrated before: skips the calibration.
        source: How the JSON names the spec (default: its name).

    Returns:
        The study.

    Raises:
        SpecError: for a spec whose agent is not the simulated one.
    """
    started = time.perf_counter()
    require_simulated(spec)
    bias = float(spec.agent.params.get("bias", SimulatedAgentParams.model_fields["bias"].default))
    if params is not None:  # a calibration written before
        cal = Calibration(dict(params), budget.calibration, TUNING_SEED, 0, [], [])
    else:
        cal = calibrate(spec, budget.calibration, TUNING_SEED, alpha, beta)
    agents = {
        f"calibrated (bias {bias:+.2f})": bias,
        f"bias {bias - shift:+.2f} (−{shift:g})": bias - shift,
        f"bias {bias + shift:+.2f} (+{shift:g})": bias + shift,
    }
    arms = [with_controller(spec, "sprt", cal.params, b) for b in agents.values()]
    arms.append(with_controller(spec, "threshold", {}, bias))
    rows = _run_arms(arms, budget.episodes, executor or ExecutorConfig("serial", 1))
    curves = [
        abandon_curve(r, spec.limits.max_steps, label, b)
        for r, (label, b) in zip(rows, agents.items(), strict=False)
    ]
    success = {
        c.label: sum(x.success for x in r) / len(r) for c, r in zip(curves, rows, strict=False)
    }
    success["threshold"] = sum(x.success for x in rows[-1]) / len(rows[-1])
    saving = token_saving(rows[-1], rows[0])
    return SPRTStudy(
        source or spec.name,
        spec.name,
        cal,
        curves,
        success,
        saving,
        beta,
        budget.episodes,
        time.perf_counter() - started,
    )


def _run_arms(
    arms: Sequence[ExperimentSpec], episodes: int, config: ExecutorConfig
) -> list[list[Row]]:
    """Each arm's rows on the evaluation seed, each arm in episode ranges run on ``config``."""
    parts = max(1, min(config.parallelism // len(arms), episodes))
    edges = [episodes * k // parts for k in range(parts + 1)]
    jobs = [
        (a.model_dump_json(), edges[k + 1] - edges[k], EVALUATION_SEED, edges[k])
        for a in arms
        for k in range(parts)
    ]
    with open_executor(config) as pool:
        pieces = list(pool.map(run_arm, *zip(*jobs, strict=True)))
    return [
        [x for piece in pieces[i * parts : (i + 1) * parts] for x in piece]
        for i in range(len(arms))
    ]


def sprt_table(summary: dict[str, Any], beta: float) -> TextTable:
    """Per agent: success, the false-abandon curve's maximum with its band, false completions."""
    rows = []
    for a in summary["agents"]:
        low, high = a["max_band"]
        rows.append(
            [
                a["label"],
                f"{a['success']:.1%}",
                f"{a['feasible']}",
                f"{a['max_share']:.2%} [{low:.2%}, {high:.2%}] at t={a['max_step']}",
                f"{a['max_upper']:.2%}",
                "yes" if a["max_upper"] <= beta else "NO",
                f"{a['false_completion_share']:.2%}",
            ]
        )
    s = summary["token_saving_vs_threshold"]
    half = summary["calibration"]["episodes"] // 2
    notes = [
        f"calibrated on tuning seed {summary['calibration']['seed']}: tables on episodes 0.."
        f"{half - 1}, boundaries on {half}..{summary['calibration']['episodes'] - 1}; "
        f"measured on seed {summary['evaluation_seed']}",
        "false abandon = give-up on a feasible task (outcome abandoned); share of episodes "
        "feasible at their first step; band: 95 % Clopper–Pearson, step by step",
        f"threshold success on the calibrated agent: {summary['threshold_success']:.1%}",
    ]
    if s.get("failing"):
        lo, hi = s["saving_ci95"]
        notes.append(
            f"token saving vs threshold on the {s['failing']} episodes threshold fails: "
            f"{s['saving']:.0f} [{lo:.0f}, {hi:.0f}] tokens per episode "
            f"({s['saving_share']:.1%} of threshold's {s['base_tokens']:.0f}; paired bootstrap)"
        )
    columns = [
        "agent",
        "success",
        "feasible",
        "max false-abandon share (95% CP)",
        "max CP upper",
        f"≤ β={beta:g}",
        "false completions",
    ]
    return TextTable("sprt: false abandons by step", columns, rows, notes, left=1, bold=False)


__all__ = [
    "EVALUATION_SEED",
    "TUNING_SEED",
    "AbandonCurve",
    "Calibration",
    "Row",
    "SPRTBudget",
    "SPRTStudy",
    "abandon_curve",
    "calibrate",
    "done_boundary",
    "pac_boundary",
    "require_simulated",
    "row_of",
    "run_arm",
    "sprt_study",
    "sprt_table",
    "token_saving",
    "with_controller",
]
