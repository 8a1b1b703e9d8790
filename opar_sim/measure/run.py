"""The metrics of a whole run, per controller, from its run directory.

``analyze(run_dir)`` reads episodes.jsonl, then steps.jsonl once into columns
(``read_step_columns``), and measures every episode on lockstep arrays
(``episode_metrics.measure_episodes``): each controller's episodes are padded
into episodes x steps arrays and the step response, replanning rhythm, trend
reversals, damping and action cycles are array operations on their rows,
giving the numbers the per-episode functions give.  The per-episode table is
kept as columns (``EpisodeTable``); ``RunAnalysis.episodes`` and the
trajectories the figures draw (``RunAnalysis.traces``, the first ``keep``
episodes of each controller) are built from it on first use.

Each controller's episodes are then aggregated (``controller_metrics``),
pass^k over worlds: the rows of one episode index (its ``trials``) are the
attempts at one world, judged by their last Reflexion attempt.  A run with one
trial per world has pass^1 only; pass^k for k > 1 is reported missing (NaN),
not estimated from different worlds.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from opar_sim.measure.controller_metrics import ORACLE, ControllerMetrics, controller_metrics
from opar_sim.measure.episode_metrics import EpisodeMetrics, EpisodeTable, measure_episodes
from opar_sim.measure.stats import Estimate, paired_difference
from opar_sim.rundir import (
    EpisodeTrace,
    check_run_dir,
    episode_key,
    read_spec,
    write_bytes,
)
from opar_sim.rundir.columns import (
    StepColumns,
    forget_step_columns,
    read_episode_rows,
    read_step_columns,
)
from opar_sim.rundir.frames import to_frame
from opar_sim.spec.schema import ExperimentSpec

BAYES = "bayes"  # the Bayes decision on an approximate model of the loop: a reference, no ceiling


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
        """The oracle's success minus bayes's (oracle − bayes), paired (None without both).

        Every controller's difference to the oracle minus its difference to bayes is
        this same number: the gap between two reference laws (neither is a bound, so it
        is not the value of reading the hidden state).
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
    write_bytes(file, (json.dumps(table, indent=2) + "\n").encode(), inside=file.parent)
    return file
