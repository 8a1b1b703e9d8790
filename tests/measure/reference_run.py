"""The per-episode run analysis as it was before the lockstep arrays: the test's reference.

This is ``opar_sim.measure.run`` as of commit 454012b (each episode streamed
from ``iter_traces`` and measured by the 1-D functions of ``metrics`` and
``oscillation``), kept only here so ``test_run_arrays`` can check that the
array analysis writes the same numbers.  Its docstring follows.


``analyze(run_dir)`` reads episodes.jsonl, then streams steps.jsonl once,
computing each episode's step response and oscillation as it goes; it keeps
one small ``EpisodeMetrics`` per episode and the trajectories of the first
``keep`` episodes of each controller (for the figures), never all the steps.

pass^k is τ-bench's over worlds: the rows of one episode index (its
``trials``) are the attempts at one world, judged by their last Reflexion
attempt.  A run with one trial per world has pass^1 only; pass^k for k > 1
is reported missing (NaN), not estimated from different worlds.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from opar_sim.measure.controller_metrics import ControllerMetrics
from opar_sim.measure.episode_metrics import EpisodeMetrics
from opar_sim.measure.metrics import episode_response, step_info
from opar_sim.measure.oscillation import action_cycles as find_cycles
from opar_sim.measure.oscillation import damping, replan_rhythm, trend_sign_changes
from opar_sim.measure.pass_k import pass_hat_ks, success_histogram, world_intervals
from opar_sim.measure.stats import Estimate, Proportion, bootstrap_mean, paired_difference
from opar_sim.measure.stats import success_rate as proportion
from opar_sim.rundir import (
    EpisodeTrace,
    check_run_dir,
    episode_key,
    iter_episodes,
    iter_traces,
    read_spec,
)
from opar_sim.rundir.frames import to_frame
from opar_sim.spec.schema import ExperimentSpec

ORACLE = "oracle"
BAYES = "bayes"  # the Bayes decision on an approximate model of the loop: a reference, no ceiling
PASS_K = (1, 2, 4, 8)
DAMPING_TOLERANCE = 0.02  # the settling band: smaller excursions are noise


def episode_metrics(
    trace: EpisodeTrace, row: dict[str, Any], horizon: float | None, thrash_k: int
) -> EpisodeMetrics:
    """The metrics of one episode from its trajectory and its episodes.jsonl row."""
    estimate = np.where(np.isnan(trace.estimate), 0.0, trace.estimate)
    response = episode_response(trace.progress, estimate, trace.time, horizon=horizon)
    # settling in steps: the same definition on the step axis
    steps_axis = np.concatenate(([0.0], trace.step.astype(float)))
    by_step = step_info(np.concatenate(([0.0], trace.progress)), steps_axis)
    enacted = int(row["replans"]) if "replans" in row else None  # summary.json's count
    rhythm = replan_rhythm(
        trace.signals, trace.step.tolist(), k=thrash_k, times=trace.time, enacted=enacted
    )
    damp = damping(estimate, trace.time, tolerance=DAMPING_TOLERANCE)
    cycles = find_cycles(trace.actions)
    return EpisodeMetrics(
        controller=trace.controller,
        episode=trace.episode,
        attempt=trace.attempt,
        trial=trace.trial,
        outcome=str(row.get("outcome", "")),
        steps=len(trace),
        tokens=int(row.get("tokens", 0)),
        sim_seconds=float(row.get("sim_seconds", trace.time[-1] if len(trace) else 0.0)),
        response=response,
        settling_step=by_step.settling_time,
        replans=rhythm.replans,
        thrash=rhythm.thrash,
        dwell=rhythm.mean_dwell,
        dwell_seconds=rhythm.mean_dwell_seconds,
        sign_changes=trend_sign_changes(1.0 - estimate),
        damping_ratio=damp.damping_ratio,
        decay_ratio=damp.decay_ratio,
        oscillating=damp.oscillating,
        cycles=len(cycles),
        longest_cycle=max((c.length for c in cycles), default=0),
    )


def _median(values: Iterable[float]) -> float:
    x = np.array([v for v in values if not math.isnan(v)], float)
    return float(np.median(x)) if x.size else math.nan


def _mean(values: Iterable[float]) -> float:
    x = np.array(list(values), float)
    return float(x.mean()) if x.size else math.nan


def controller_metrics(
    name: str,
    episodes: list[EpisodeMetrics],
    successes: list[bool],
    rng: np.random.Generator,
    oracle: list[tuple[EpisodeMetrics, bool]] | None,
    trials: int,
) -> ControllerMetrics:
    """Aggregate one controller's episodes (every trial of every world).

    Args:
        name: The controller.
        episodes: Its episodes' metrics, in file order.
        successes: Whether each of ``episodes`` succeeded.
        rng: The generator of the bootstrap intervals.
        oracle: The oracle's episodes and successes, for paired regret, or None.
        trials: The runs of each world (the spec's ``trials``).

    Returns:
        The controller's metrics.
    """
    n = len(episodes)
    worlds = _worlds(episodes, successes)
    pass_k = {k: math.nan for k in PASS_K} | pass_hat_ks(worlds, trials)
    outcomes = Counter(e.outcome for e in episodes)
    replans = sum(e.replans for e in episodes)
    total_steps = sum(e.steps for e in episodes)
    dwell_n = sum(max(e.replans - 1, 0) for e in episodes)
    dwell_sum = sum(e.dwell * (e.replans - 1) for e in episodes if e.replans > 1)
    dwell_s = sum(e.dwell_seconds * (e.replans - 1) for e in episodes if e.replans > 1)
    settled = [e for e in episodes if e.response.true.settled]
    regret = token_regret = None
    if oracle is not None and name != ORACLE:
        mine = {e.key: float(s) for e, s in zip(episodes, successes, strict=True)}
        best = {e.key: float(s) for e, s in oracle}
        regret = paired_difference(best, mine, rng)
        token_regret = paired_difference(
            {e.key: float(e.tokens) for e in episodes},
            {e.key: float(e.tokens) for e, _ in oracle},
            rng,
        )
    success = proportion(sum(successes), n)
    pass_k_ci: dict[int, tuple[float, float]] = {}
    if trials > 1:  # repeated trials: the world bootstrap (its own generator)
        (low, high), pass_k_ci = world_intervals(worlds, trials)
        success = Proportion(success.successes, success.n, low, high)
    return ControllerMetrics(
        controller=name,
        episodes=n,
        success=success,
        pass_k=dict(sorted(pass_k.items())),
        pass_k_ci=pass_k_ci,
        trials=trials,
        worlds=sum(success_histogram(worlds, trials)),
        world_successes=success_histogram(worlds, trials),
        steps=bootstrap_mean([e.steps for e in episodes], rng),
        tokens=bootstrap_mean([e.tokens for e in episodes], rng),
        sim_seconds=bootstrap_mean([e.sim_seconds for e in episodes], rng),
        outcomes=dict(sorted(outcomes.items())),
        premature_share=outcomes.get("premature", 0) / n if n else math.nan,
        replans=bootstrap_mean([e.replans for e in episodes], rng),
        replan_rate=replans / total_steps if total_steps else 0.0,
        thrash_share=sum(e.thrash for e in episodes) / replans if replans else 0.0,
        mean_dwell=dwell_sum / dwell_n if dwell_n else math.nan,
        mean_dwell_seconds=dwell_s / dwell_n if dwell_n else math.nan,
        sign_changes=_mean(e.sign_changes for e in episodes),
        oscillating_share=_mean(e.oscillating for e in episodes),
        damping_ratio=_median(e.damping_ratio for e in episodes),
        decay_ratio=_median(e.decay_ratio for e in episodes),
        cycle_share=_mean(e.cycles > 0 for e in episodes),
        settled_share=len(settled) / n if n else math.nan,
        rise_time=_median(e.response.true.rise_time for e in episodes),
        settling_time=_median(e.response.true.settling_time for e in settled),
        settling_step=_median(e.settling_step for e in settled),
        overshoot=_mean(e.response.true.overshoot for e in episodes),
        iae=_mean(e.response.true.iae for e in episodes),
        est_settled_share=_mean(e.response.estimate.settled for e in episodes),
        est_settling_time=_median(e.response.estimate.settling_time for e in episodes),
        mean_gap=_mean(e.response.gap.mean_gap for e in episodes),
        final_gap=_mean(e.response.gap.final_gap for e in episodes),
        regret=regret,
        token_regret=token_regret,
    )


@dataclass
class RunAnalysis:
    """The metrics of a run directory, per controller in run order."""

    path: Path
    spec: ExperimentSpec | None
    controllers: dict[str, ControllerMetrics]
    episodes: list[EpisodeMetrics]
    traces: dict[str, list[EpisodeTrace]] = field(default_factory=dict)
    thrash_k: int = 2
    # controller -> (episode, trial, attempt) -> 1.0 if the episode succeeded
    successes: dict[str, dict[tuple[int, int, int], float]] = field(default_factory=dict)

    @property
    def has_oracle(self) -> bool:
        """Whether the run includes the oracle controller (so regret can be measured)."""
        return ORACLE in self.controllers

    @property
    def has_bayes(self) -> bool:
        """Whether the run includes ``bayes`` (differences to it, which can be negative)."""
        return BAYES in self.controllers

    def regret_to(self, reference: str, seed: int = 1) -> dict[str, Estimate]:
        """Every other controller's regret against ``reference``, paired per episode.

        The reference's success minus the controller's, with a bootstrap interval
        drawn from a generator of its own (the metrics' intervals are unchanged).

        Args:
            reference: The controller measured against (``bayes``, ``oracle``).
            seed: The seed of the bootstrap resamples.

        Returns:
            Controller -> the paired difference; empty without the reference.
        """
        ref = self.successes.get(reference)
        if ref is None:
            return {}
        rng = np.random.default_rng(seed)
        return {
            name: paired_difference(ref, mine, rng)
            for name, mine in self.successes.items()
            if name != reference
        }

    def value_of_information(self, seed: int = 1) -> Estimate | None:
        """The oracle's success minus bayes's, paired per episode (None without both).

        Every controller's regret against the oracle minus its regret against
        bayes is this same number: what reading the hidden state is worth.
        """
        if not (self.has_oracle and self.has_bayes):
            return None
        rng = np.random.default_rng(seed)
        return paired_difference(self.successes[ORACLE], self.successes[BAYES], rng)

    def to_frame(self) -> Any:
        """One row per controller (needs pandas)."""
        rows = [m.row() for m in self.controllers.values()]
        return to_frame(rows, index=list(self.controllers))

    def episodes_frame(self) -> Any:
        """One row per episode (needs pandas)."""
        return to_frame([e.row() for e in self.episodes])


def analyze(path: Path, *, thrash_k: int = 2, keep: int = 300, seed: int = 0) -> RunAnalysis:
    """Measure every episode of the run in ``path`` (RunDirError if it is not one).

    Args:
        path: The run directory.
        thrash_k: A REPLAN within this many steps of the previous one is thrash.
        keep: Trajectories kept per controller for the figures.
        seed: The seed of the bootstrap intervals.

    Returns:
        Per-controller and per-episode metrics, with the kept trajectories.
    """
    check_run_dir(path)
    spec = read_spec(path)
    rows = {episode_key(r): r for r in _slim(iter_episodes(path))}
    times = [float(r.get("sim_seconds", 0.0)) for r in rows.values()]
    horizon = spec.limits.time_budget if spec is not None else max(times, default=0.0)
    by_controller: dict[str, list[EpisodeMetrics]] = {}
    traces: dict[str, list[EpisodeTrace]] = {}
    for trace in iter_traces(path):
        row = rows.get((trace.controller, *_key(trace)))
        if row is None or len(trace) == 0:
            continue  # an interrupted run: steps written, episode line not
        metrics = episode_metrics(trace, row, horizon, thrash_k)
        by_controller.setdefault(trace.controller, []).append(metrics)
        kept = traces.setdefault(trace.controller, [])
        if len(kept) < keep:
            kept.append(trace)
    trials = spec.trials if spec is not None else max((k[2] for k in rows), default=1)
    success = {
        name: [bool(rows[(name, *e.key)].get("success")) for e in eps]
        for name, eps in by_controller.items()
    }
    oracle = None
    if ORACLE in by_controller:
        oracle = list(zip(by_controller[ORACLE], success[ORACLE], strict=True))
    rng = np.random.default_rng(seed)
    controllers = {
        name: controller_metrics(name, eps, success[name], rng, oracle, trials)
        for name, eps in by_controller.items()
    }
    episodes = [e for eps in by_controller.values() for e in eps]
    keyed = {
        name: {e.key: float(ok) for e, ok in zip(eps, success[name], strict=True)}
        for name, eps in by_controller.items()
    }
    return RunAnalysis(path, spec, controllers, episodes, traces, thrash_k, keyed)


_KEEP_FIELDS = (
    "controller",
    "episode",
    "trial",
    "attempt",
    "outcome",
    "success",
    "tokens",
    "sim_seconds",
    "replans",  # REPLANs enacted: the one count of summary.json, run, compare and the report
)


def _key(trace: EpisodeTrace) -> tuple[int, int, int]:
    return (trace.episode, trace.trial, trace.attempt)


def _worlds(episodes: list[EpisodeMetrics], successes: list[bool]) -> dict[int, list[bool]]:
    """World (episode index) -> the success of each trial, judged by its last attempt."""
    last: dict[tuple[int, int], bool] = {}
    for e, s in zip(episodes, successes, strict=True):
        last[(e.episode, e.trial)] = s  # Reflexion attempts come in order: the last wins
    worlds: dict[int, list[bool]] = {}
    for (episode, _), s in last.items():
        worlds.setdefault(episode, []).append(s)
    return worlds


def _slim(rows: Iterable[dict[str, Any]]) -> Iterable[dict[str, Any]]:
    """Episode rows without the answer text and other fields the metrics do not use."""
    for r in rows:
        yield {k: r[k] for k in _KEEP_FIELDS if k in r}


def _json_safe(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, np.generic):
        return _json_safe(value.item())
    return value


def write_metrics(analysis: RunAnalysis, file: Path) -> Path:
    """Write the per-controller metrics as JSON (NaN as null); return the path."""
    table = {
        name: {k: _json_safe(v) for k, v in m.row().items()}
        for name, m in analysis.controllers.items()
    }
    file.write_text(json.dumps(table, indent=2) + "\n", encoding="utf-8")
    return file
