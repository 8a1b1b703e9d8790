"""The metrics of a whole run, per controller, from its run directory.

``analyze(run_dir)`` reads episodes.jsonl, then steps.jsonl once into columns
(``read_step_columns``), and measures every episode on lockstep arrays: each
controller's episodes are padded into episodes x steps arrays and the step
response, replanning rhythm, trend reversals, damping and action cycles are
array operations on their rows (``metrics.step_info_rows`` and the ``*_rows``
functions of ``oscillation``), giving the numbers the per-episode functions
give.  The per-episode table is kept as columns (``EpisodeTable``);
``RunAnalysis.episodes`` and the trajectories the figures draw
(``RunAnalysis.traces``, the first ``keep`` episodes of each controller) are
built from it on first use.

pass^k is τ-bench's over worlds: the rows of one episode index (its
``trials``) are the attempts at one world, judged by their last Reflexion
attempt.  A run with one trial per world has pass^1 only; pass^k for k > 1
is reported missing (NaN), not estimated from different worlds.
"""

from __future__ import annotations

import json
import math
import time
from collections import Counter
from dataclasses import asdict, dataclass, field, fields
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from opar_sim.measure.metrics import (
    EpisodeResponse,
    EstimateGap,
    FloatArray,
    IntArray,
    StepInfo,
    estimate_gap_rows,
    step_info_rows,
)
from opar_sim.measure.oscillation import (
    REPLAN,
    action_cycles_rows,
    damping_rows,
    replan_rhythm_rows,
    trend_sign_changes_rows,
)
from opar_sim.measure.stats import (
    Estimate,
    Proportion,
    bootstrap_mean,
    paired_difference,
    pass_hat_ks,
    success_histogram,
)
from opar_sim.measure.stats import success_rate as proportion
from opar_sim.rundir import (
    EpisodeTrace,
    check_run_dir,
    episode_key,
    read_spec,
)
from opar_sim.rundir.columns import (
    StepColumns,
    forget_step_columns,
    read_episode_rows,
    read_step_columns,
)
from opar_sim.rundir.frames import to_frame
from opar_sim.spec.schema import ExperimentSpec

ORACLE = "oracle"
BAYES = "bayes"  # the Bayes-optimal law: the ceiling of laws that read only the observations
PASS_K = (1, 2, 4, 8)
DAMPING_TOLERANCE = 0.02  # the settling band: smaller excursions are noise


@dataclass(frozen=True, slots=True)
class EpisodeMetrics:
    """Convergence and oscillation of one episode of one controller."""

    controller: str
    episode: int
    attempt: int  # Reflexion attempt at the episode seed (1 without Reflexion)
    trial: int  # repeated trial of the episode's world (1 without spec trials)
    outcome: str
    steps: int
    tokens: int
    sim_seconds: float
    response: EpisodeResponse  # on simulated seconds
    settling_step: float  # true progress settled from this step on (NaN: never)
    replans: int
    thrash: int
    dwell: float  # steps between successive REPLANs
    dwell_seconds: float  # simulated seconds between successive REPLANs
    sign_changes: int  # of the estimated error's trend
    damping_ratio: float  # of the estimate about its final value (NaN: no oscillation)
    decay_ratio: float  # amplitude ratio of its peaks one period apart
    oscillating: bool
    cycles: int  # action cycles found
    longest_cycle: int  # actions in the longest periodic stretch

    @property
    def key(self) -> tuple[int, int, int]:
        """(episode, trial, attempt): the same random numbers for every controller."""
        return (self.episode, self.trial, self.attempt)

    def row(self) -> dict[str, Any]:
        """A flat mapping of every field, step responses prefixed true_/est_."""
        out = {k: v for k, v in asdict(self).items() if k != "response"}
        out |= {f"true_{k}": v for k, v in asdict(self.response.true).items()}
        out |= {f"est_{k}": v for k, v in asdict(self.response.estimate).items()}
        out |= {f"gap_{k}": v for k, v in asdict(self.response.gap).items()}
        return out


_STEP_FIELDS = tuple(f.name for f in fields(StepInfo))
_GAP_FIELDS = tuple(f.name for f in fields(EstimateGap))


@dataclass(slots=True)
class EpisodeTable:
    """The metrics of many episodes as columns, one entry per episode (``EpisodeMetrics``' fields).

    ``true``, ``estimate`` and ``gap`` hold the step-response fields by name.
    """

    controller: list[str]
    episode: IntArray
    attempt: IntArray
    trial: IntArray
    outcome: list[str]
    steps: IntArray
    tokens: IntArray
    sim_seconds: FloatArray
    true: dict[str, FloatArray]
    estimate: dict[str, FloatArray]
    gap: dict[str, FloatArray]
    settling_step: FloatArray
    replans: IntArray
    thrash: IntArray
    dwell: FloatArray
    dwell_seconds: FloatArray
    sign_changes: IntArray
    damping_ratio: FloatArray
    decay_ratio: FloatArray
    oscillating: npt.NDArray[np.bool_]
    cycles: IntArray
    longest_cycle: IntArray

    def __len__(self) -> int:
        return len(self.controller)

    def keys(self) -> list[tuple[int, int, int]]:
        """(episode, trial, attempt) of each episode."""
        return list(
            zip(self.episode.tolist(), self.trial.tolist(), self.attempt.tolist(), strict=True)
        )

    def take(self, index: IntArray) -> EpisodeTable:
        """The episodes at ``index``, in that order."""
        out: dict[str, Any] = {}
        for name in self.__slots__:
            value = getattr(self, name)
            if isinstance(value, list):
                out[name] = [value[i] for i in index.tolist()]
            elif isinstance(value, dict):
                out[name] = {k: v[index] for k, v in value.items()}
            else:
                out[name] = value[index]
        return EpisodeTable(**out)

    def metrics(self) -> list[EpisodeMetrics]:
        """One ``EpisodeMetrics`` per episode, in table order."""
        lists = {
            name: getattr(self, name).tolist()
            for name in self.__slots__
            if name not in ("controller", "outcome", "true", "estimate", "gap")
        }
        true = [self.true[f].tolist() for f in _STEP_FIELDS]
        est = [self.estimate[f].tolist() for f in _STEP_FIELDS]
        gap = [self.gap[f].tolist() for f in _GAP_FIELDS]
        out = []
        for i in range(len(self)):
            response = EpisodeResponse(
                true=StepInfo(*(c[i] for c in true)),
                estimate=StepInfo(*(c[i] for c in est)),
                gap=EstimateGap(*(c[i] for c in gap)),
            )
            out.append(
                EpisodeMetrics(
                    controller=self.controller[i],
                    outcome=self.outcome[i],
                    response=response,
                    **{name: values[i] for name, values in lists.items()},
                )
            )
        return out


def _lockstep(columns: StepColumns, blocks: IntArray) -> dict[str, Any]:
    """The blocks' step series padded into episodes x steps arrays (padding: the last value)."""
    starts = columns.offsets[blocks]
    lengths = columns.offsets[blocks + 1] - starts
    width = int(lengths.max()) if len(lengths) else 0
    at = np.minimum(np.arange(width)[None, :], np.maximum(lengths - 1, 0)[:, None])
    index = starts[:, None] + at
    return {
        "lengths": lengths,
        "step": columns.step[index],
        "time": columns.time[index],
        "progress": columns.progress[index],
        "estimate": columns.estimate[index],
        "signal": columns.signal[index],
        "action": columns.action[index],
    }


def _prepend_zero(x: FloatArray) -> FloatArray:
    return np.concatenate((np.zeros((len(x), 1)), x), axis=1)


def measure_episodes(
    columns: StepColumns,
    blocks: IntArray,
    rows: list[dict[str, Any]],
    horizon: float | None,
    thrash_k: int,
) -> EpisodeTable:
    """The metrics of the episodes ``blocks`` of ``columns`` (each ≥ 1 step), on lockstep arrays.

    Every field is the one ``EpisodeMetrics`` of the per-episode functions
    (``episode_response``, ``replan_rhythm``, ``damping``, ``action_cycles``)
    would hold, computed for all rows at once.

    Args:
        columns: The run's steps as columns.
        blocks: The blocks to measure, in the order of the table.
        rows: The episodes.jsonl row of each block.
        horizon: The time the error integrals hold the last sample up to.
        thrash_k: A REPLAN within this many steps of the previous one is thrash.

    Returns:
        The table, one entry per block.
    """
    lock = _lockstep(columns, blocks)
    n = lock["lengths"]
    estimate = np.where(np.isnan(lock["estimate"]), 0.0, lock["estimate"])
    progress = lock["progress"]
    t0 = _prepend_zero(lock["time"])
    true = step_info_rows(_prepend_zero(progress), t0, n + 1, horizon=horizon)
    est = step_info_rows(_prepend_zero(estimate), t0, n + 1, horizon=horizon)
    gap = estimate_gap_rows(progress, estimate, n)
    # settling in steps: the same settled sample on the step axis
    step_axis = _prepend_zero(lock["step"].astype(float))
    settled = true.pop("settled_index")
    est.pop("settled_index")
    r = np.arange(len(n))
    settling_step = np.where(settled < n + 1, step_axis[r, np.minimum(settled, n)], math.nan)
    enacted = np.array([int(row["replans"]) if "replans" in row else -1 for row in rows], np.int64)
    replan_code = columns.signals.index(REPLAN) if REPLAN in columns.signals else -1
    rhythm = replan_rhythm_rows(
        lock["signal"] == replan_code, lock["step"], lock["time"], n, k=thrash_k, enacted=enacted
    )
    damp = damping_rows(estimate, n, tolerance=DAMPING_TOLERANCE)
    actions = lock["action"]
    if "∅" in columns.actions:  # action_cycles reads a missing action as "∅"
        actions = np.where(actions == columns.actions.index("∅"), 0, actions)
    cycles, longest = action_cycles_rows(actions, n)
    last_time = lock["time"][r, n - 1].tolist()
    return EpisodeTable(
        controller=[columns.controllers[c] for c in columns.controller[blocks].tolist()],
        episode=columns.episode[blocks],
        attempt=columns.attempt[blocks],
        trial=columns.trial[blocks],
        outcome=[str(row.get("outcome", "")) for row in rows],
        steps=n.astype(np.int64),
        tokens=np.array([int(row.get("tokens", 0)) for row in rows], np.int64),
        sim_seconds=np.array(
            [float(row.get("sim_seconds", t)) for row, t in zip(rows, last_time, strict=True)],
            float,
        ),
        true=true,
        estimate=est,
        gap=gap,
        settling_step=settling_step,
        replans=np.asarray(rhythm["replans"], np.int64),
        thrash=np.asarray(rhythm["thrash"], np.int64),
        dwell=np.asarray(rhythm["mean_dwell"], float),
        dwell_seconds=np.asarray(rhythm["mean_dwell_seconds"], float),
        sign_changes=trend_sign_changes_rows(1.0 - estimate, n),
        damping_ratio=np.asarray(damp["damping_ratio"], float),
        decay_ratio=np.asarray(damp["decay_ratio"], float),
        oscillating=np.asarray(damp["peaks"]) >= 3,
        cycles=cycles,
        longest_cycle=longest,
    )


def _median(values: npt.ArrayLike) -> float:
    x = np.asarray(values, float)
    x = x[~np.isnan(x)]
    return float(np.median(x)) if x.size else math.nan


def _mean(values: npt.ArrayLike) -> float:
    x = np.asarray(values, float)
    return float(x.mean()) if x.size else math.nan


@dataclass(frozen=True, slots=True)
class ControllerMetrics:
    """Everything measured for one controller over a run."""

    controller: str
    episodes: int
    success: Proportion
    pass_k: dict[int, float]  # k -> pass^k over worlds; NaN where k > trials
    trials: int  # runs of each world
    worlds: int  # worlds with all their trials
    world_successes: list[int]  # worlds with 0..trials successes
    steps: Estimate
    tokens: Estimate
    sim_seconds: Estimate
    outcomes: dict[str, int]
    premature_share: float
    replans: Estimate  # REPLAN decisions per episode
    replan_rate: float  # REPLAN decisions per step
    thrash_share: float  # of all REPLANs, those within k steps of the previous one
    mean_dwell: float  # steps between successive REPLANs
    mean_dwell_seconds: float  # simulated seconds between successive REPLANs
    sign_changes: float  # of the estimated error's trend, per episode
    oscillating_share: float  # episodes whose estimate swings through ≥ 3 peaks
    damping_ratio: float  # median ζ over episodes with ≥ 2 peaks
    decay_ratio: float  # median decay ratio over the same episodes
    cycle_share: float  # episodes with an action cycle (a→b→a→b, ...)
    settled_share: float  # episodes whose true progress settled in the 2 % band
    rise_time: float  # median, simulated seconds
    settling_time: float  # median over settled episodes, simulated seconds
    settling_step: float  # median over settled episodes, steps
    overshoot: float  # mean percent
    iae: float  # mean ∫|1 − p| dt up to the horizon, progress·s
    est_settled_share: float  # the same for the agent's estimate
    est_settling_time: float
    mean_gap: float  # mean of δ_task − p
    final_gap: float  # mean of δ_task − p at the last step
    regret: Estimate | None  # oracle success − this success, paired per episode
    token_regret: Estimate | None  # this controller's tokens − the oracle's, paired per episode

    def row(self) -> dict[str, Any]:
        """A flat mapping of the fields (intervals as _low/_high)."""
        out: dict[str, Any] = {}
        for name in self.__dataclass_fields__:
            value = getattr(self, name)
            if isinstance(value, Estimate):
                out |= {name: value.mean, f"{name}_low": value.low, f"{name}_high": value.high}
            elif isinstance(value, Proportion):
                out |= {"success_rate": value.rate, "success_low": value.low}
                out["success_high"] = value.high
            elif name == "pass_k":
                out |= {f"pass^{k}": v for k, v in value.items()}
            elif name == "world_successes":
                out |= {f"worlds:{c}/{self.trials}": v for c, v in enumerate(value)}
            elif name == "outcomes":
                out |= {f"outcome:{k}": v for k, v in value.items()}
            elif value is None:
                out |= {name: math.nan, f"{name}_low": math.nan, f"{name}_high": math.nan}
            else:
                out[name] = value
        return out


def controller_metrics(
    name: str,
    episodes: EpisodeTable,
    successes: list[bool],
    rng: np.random.Generator,
    oracle: tuple[EpisodeTable, list[bool]] | None,
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
    e = episodes
    n = len(e)
    keys = e.keys()
    worlds = _worlds(keys, successes)
    pass_k = {k: math.nan for k in PASS_K} | pass_hat_ks(worlds, trials)
    outcomes = Counter(e.outcome)
    replans = int(e.replans.sum())
    total_steps = int(e.steps.sum())
    many = e.replans > 1
    dwell_n = int(np.maximum(e.replans - 1, 0).sum())
    # Python sums in episode order, as the per-episode aggregation took them
    dwell_sum = sum((e.dwell[many] * (e.replans[many] - 1)).tolist())
    dwell_s = sum((e.dwell_seconds[many] * (e.replans[many] - 1)).tolist())
    settled = ~np.isnan(e.true["settling_time"])
    regret = token_regret = None
    if oracle is not None and name != ORACLE:
        o, o_success = oracle
        o_keys = o.keys()
        mine = dict(zip(keys, map(float, successes), strict=True))
        best = dict(zip(o_keys, map(float, o_success), strict=True))
        regret = paired_difference(best, mine, rng)
        token_regret = paired_difference(
            dict(zip(keys, map(float, e.tokens.tolist()), strict=True)),
            dict(zip(o_keys, map(float, o.tokens.tolist()), strict=True)),
            rng,
        )
    histogram = success_histogram(worlds, trials)
    return ControllerMetrics(
        controller=name,
        episodes=n,
        success=proportion(sum(successes), n),
        pass_k=dict(sorted(pass_k.items())),
        trials=trials,
        worlds=sum(histogram),
        world_successes=histogram,
        steps=bootstrap_mean(e.steps.astype(float), rng),
        tokens=bootstrap_mean(e.tokens.astype(float), rng),
        sim_seconds=bootstrap_mean(e.sim_seconds, rng),
        outcomes=dict(sorted(outcomes.items())),
        premature_share=outcomes.get("premature", 0) / n if n else math.nan,
        replans=bootstrap_mean(e.replans.astype(float), rng),
        replan_rate=replans / total_steps if total_steps else 0.0,
        thrash_share=int(e.thrash.sum()) / replans if replans else 0.0,
        mean_dwell=dwell_sum / dwell_n if dwell_n else math.nan,
        mean_dwell_seconds=dwell_s / dwell_n if dwell_n else math.nan,
        sign_changes=_mean(e.sign_changes),
        oscillating_share=_mean(e.oscillating),
        damping_ratio=_median(e.damping_ratio),
        decay_ratio=_median(e.decay_ratio),
        cycle_share=_mean(e.cycles > 0),
        settled_share=int(settled.sum()) / n if n else math.nan,
        rise_time=_median(e.true["rise_time"]),
        settling_time=_median(e.true["settling_time"][settled]),
        settling_step=_median(e.settling_step[settled]),
        overshoot=_mean(e.true["overshoot"]),
        iae=_mean(e.true["iae"]),
        est_settled_share=_mean(~np.isnan(e.estimate["settling_time"])),
        est_settling_time=_median(e.estimate["settling_time"]),
        mean_gap=_mean(e.gap["mean_gap"]),
        final_gap=_mean(e.gap["final_gap"]),
        regret=regret,
        token_regret=token_regret,
    )


@dataclass
class RunAnalysis:
    """The metrics of a run directory, per controller in run order.

    ``table`` holds every episode's metrics as columns, grouped by controller
    in run order; ``episodes`` (one ``EpisodeMetrics`` each) and ``traces``
    (the trajectories of the ``kept`` blocks, for the figures) are built from
    it and from the run's step columns on first use.
    """

    path: Path
    spec: ExperimentSpec | None
    controllers: dict[str, ControllerMetrics]
    table: EpisodeTable
    thrash_k: int = 2
    # controller -> (episode, trial, attempt) -> 1.0 if the episode succeeded
    successes: dict[str, dict[tuple[int, int, int], float]] = field(default_factory=dict)
    kept: dict[str, list[int]] = field(default_factory=dict)  # controller -> blocks kept
    columns: StepColumns | None = field(default=None, repr=False)

    @cached_property
    def episodes(self) -> list[EpisodeMetrics]:
        """One ``EpisodeMetrics`` per episode, grouped by controller in run order."""
        return self.table.metrics()

    @cached_property
    def traces(self) -> dict[str, list[EpisodeTrace]]:
        """The trajectories of the first episodes of each controller (for the figures)."""
        if self.columns is None:
            return {name: [] for name in self.kept}
        columns = self.columns
        return {name: [columns.trace(b) for b in blocks] for name, blocks in self.kept.items()}

    @property
    def has_oracle(self) -> bool:
        """Whether the run includes the oracle controller (so regret can be measured)."""
        return ORACLE in self.controllers

    @property
    def has_bayes(self) -> bool:
        """Whether the run includes the Bayes-optimal law (regret against the ceiling)."""
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
    rows = {episode_key(r): r for r in read_episode_rows(path, _KEEP_FIELDS)}
    times = [float(r.get("sim_seconds", 0.0)) for r in rows.values()]
    horizon = spec.limits.time_budget if spec is not None else max(times, default=0.0)
    columns = read_step_columns(path)
    names = columns.controllers
    block_keys = list(
        zip(
            [names[c] for c in columns.controller.tolist()],
            columns.episode.tolist(),
            columns.trial.tolist(),
            columns.attempt.tolist(),
            strict=True,
        )
    )
    found = [rows.get(k) for k in block_keys]  # none: an interrupted run wrote steps, not the row
    chosen = np.array([b for b, row in enumerate(found) if row is not None], np.int64)
    # grouped by controller, controllers in the order they first appear, episodes in file order
    codes = columns.controller[chosen]
    first = {c: i for i, c in reversed(list(enumerate(codes.tolist())))}
    rank = np.array([first[c] for c in codes.tolist()], np.int64)
    blocks = chosen[np.argsort(rank, kind="stable")]
    chosen_rows = [found[b] for b in blocks.tolist()]
    episode_rows = [row for row in chosen_rows if row is not None]
    table = measure_episodes(columns, blocks, episode_rows, horizon, thrash_k)
    success = [bool(row.get("success")) for row in episode_rows]
    spans: dict[str, tuple[int, int]] = {}
    for i, name in enumerate(table.controller):
        start, _ = spans.get(name, (i, i))
        spans[name] = (start, i + 1)
    parts = {name: (table.take(np.arange(a, b)), success[a:b]) for name, (a, b) in spans.items()}
    trials = spec.trials if spec is not None else max((k[2] for k in rows), default=1)
    oracle = parts.get(ORACLE)
    rng = np.random.default_rng(seed)
    controllers = {
        name: controller_metrics(name, eps, ok, rng, oracle, trials)
        for name, (eps, ok) in parts.items()
    }
    keyed = {
        name: dict(zip(eps.keys(), map(float, ok), strict=True))
        for name, (eps, ok) in parts.items()
    }
    kept = {name: blocks[a : min(b, a + keep)].tolist() for name, (a, b) in spans.items()}
    return RunAnalysis(path, spec, controllers, table, thrash_k, keyed, kept, columns)


def analyze_dir(rundir: Path, *, thrash_k: int = 2) -> RunAnalysis:
    """What ``compare`` and ``plot`` compute of a run: its analysis, steps.jsonl parsed afresh.

    The function the benchmarks time (``analysis_cost``): the run's files are
    read (the step columns of an earlier call are not reused) and every
    episode measured; no trajectory is built and nothing is drawn.

    Args:
        rundir: The run directory.
        thrash_k: A REPLAN within this many steps of the previous one is thrash.

    Returns:
        The run's analysis.
    """
    forget_step_columns()
    return analyze(rundir, thrash_k=thrash_k)


@dataclass(frozen=True, slots=True)
class AnalysisCost:
    """CPU time of ``analyze_dir`` on one run: the median of ``repeats`` calls."""

    episodes: int
    seconds: float  # CPU seconds of one analysis (median)
    per_episode_us: float  # microseconds of CPU per episode
    repeats: int


def analysis_cost(rundir: Path, *, repeats: int = 3) -> AnalysisCost:
    """Measure the CPU time ``analyze_dir`` takes on ``rundir`` per episode.

    Args:
        rundir: The run directory.
        repeats: Calls timed; the median is reported.

    Returns:
        Episodes analysed, CPU seconds per analysis and microseconds per episode.
    """
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    spent: list[float] = []
    episodes = 0
    for _ in range(repeats):
        start = time.process_time()
        analysis = analyze_dir(rundir)
        spent.append(time.process_time() - start)
        episodes = len(analysis.table)
    seconds = float(np.median(spent))
    return AnalysisCost(episodes, seconds, seconds / max(episodes, 1) * 1e6, repeats)


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


def _worlds(keys: list[tuple[int, int, int]], successes: list[bool]) -> dict[int, list[bool]]:
    """World (episode index) -> the success of each trial, judged by its last attempt."""
    last: dict[tuple[int, int], bool] = {}
    for (episode, trial, _), s in zip(keys, successes, strict=True):
        last[(episode, trial)] = s  # Reflexion attempts come in order: the last wins
    worlds: dict[int, list[bool]] = {}
    for (episode, _), s in last.items():
        worlds.setdefault(episode, []).append(s)
    return worlds


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
