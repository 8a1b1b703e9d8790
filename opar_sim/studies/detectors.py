"""Scoring the stall and loop detectors against the simulator's truth of being stuck.

The truth: an episode is *stuck* during a run of at least ``k`` consecutive
steps that make no hidden progress (progress after the step not above the
progress before it; 0 before the first step).  Such a run is a *stuck
spell*; its onset is its first step, the first step without progress.

The detectors watch the episodes passively (they do not act, so every
detector and threshold sees the same trajectories): each step's score comes
from the detector's own ``score`` (``opar_sim.core.detectors``), and a
threshold turns scores into alarms.

* **precision**: of the alarms raised (steps where the score reaches the
  threshold after a step below it, or at the first step), the share raised at
  a stuck step;
* **recall**: of the stuck spells, the share during which the score is at or
  above the threshold at some step;
* **delay**: for a detected spell, the steps from its onset to the first such
  step (0: the alarm stood at the first step without progress; a counter
  that needs three such steps has delay 2).

Precision and recall carry Wilson 95 % intervals; the median delay a
distribution-free 95 % interval (order statistics, binomial ranks).

``detectors(spec, budget, executor)`` is the study: every detector scored on as many
tuning episodes (``TUNING_SEED``) and evaluation episodes (the spec's seed); each one's
threshold is chosen on the tuning episodes and every number reported comes from the
evaluation ones.  Its ``DetectorsResult`` has the command's ``table()`` and ``to_dict()``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from opar_sim.core.detectors import DETECTORS, Detector
from opar_sim.core.types import EpisodeResult
from opar_sim.measure.exact_intervals import median_interval
from opar_sim.measure.stats import wilson_interval
from opar_sim.measure.table import TextTable
from opar_sim.running.executors import ExecutorConfig
from opar_sim.running.runner import simulate
from opar_sim.spec.edit import with_overrides
from opar_sim.spec.schema import ExperimentSpec, SpecError
from opar_sim.studies.seeds import TUNING_SEED

STUCK_K = 3
THRESHOLDS: dict[str, tuple[float, ...]] = {
    "same_call": (2, 3, 4, 5, 6),
    "pattern": (3, 4, 5, 6, 8),
    "stall": (1, 2, 3, 4, 5, 6),
    "near_identical": (2, 3, 4, 5, 6),
    "cusum": (0.1, 0.2, 0.3, 0.45, 0.6, 0.8, 1.2),
    "integral": (5, 10, 15, 20, 25, 30, 40),
}


def spells(flags: Sequence[bool]) -> list[tuple[int, int]]:
    """Maximal runs of True as (first index, last index), 0-based."""
    out: list[tuple[int, int]] = []
    start = None
    for i, f in enumerate(flags):
        if f and start is None:
            start = i
        if not f and start is not None:
            out.append((start, i - 1))
            start = None
    if start is not None:
        out.append((start, len(flags) - 1))
    return out


def stuck_steps(progress: Sequence[float], k: int = STUCK_K) -> list[bool]:
    """Per step (1..n): inside a run of at least ``k`` steps without hidden progress.

    A step makes no progress when hidden progress after it is not above the
    progress before it (0 before the first step).

    Args:
        progress: Hidden progress after each step.
        k: The shortest run that counts as stuck (>= 1).

    Returns:
        One flag per step.
    """
    p = [0.0, *progress]
    still = [p[t] <= p[t - 1] for t in range(1, len(p))]
    flags = [False] * len(still)
    for first, last in spells(still):
        if last - first + 1 >= k:
            flags[first : last + 1] = [True] * (last - first + 1)
    return flags


def scores(detector: Detector, episode: EpisodeResult) -> list[float]:
    """The detector's score after each step of ``episode`` (it is reset first)."""
    detector.reset(np.random.default_rng(0))
    return [detector.score(s) for s in episode.steps]


@dataclass(frozen=True)
class Score:
    """One detector at one threshold on a set of episodes."""

    detector: str
    threshold: float
    alarms: int
    true_alarms: int
    spells: int
    detected: int
    delays: tuple[int, ...]

    @property
    def precision(self) -> float:
        """True alarms over alarms (nan without alarms)."""
        return self.true_alarms / self.alarms if self.alarms else float("nan")

    @property
    def recall(self) -> float:
        """Detected spells over spells (nan without spells)."""
        return self.detected / self.spells if self.spells else float("nan")

    @property
    def f1(self) -> float:
        """The harmonic mean of precision and recall (0 when either is 0 or undefined)."""
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p > 0 and r > 0 else 0.0

    @property
    def median_delay(self) -> float:
        """Median steps from a spell's onset to its detection (nan if none detected)."""
        return float(np.median(self.delays)) if self.delays else float("nan")

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready, with the intervals."""
        return {
            "detector": self.detector,
            "threshold": self.threshold,
            "alarms": self.alarms,
            "true_alarms": self.true_alarms,
            "precision": self.precision,
            "precision_ci95": list(wilson_interval(self.true_alarms, self.alarms))
            if self.alarms
            else None,
            "spells": self.spells,
            "detected": self.detected,
            "recall": self.recall,
            "recall_ci95": list(wilson_interval(self.detected, self.spells))
            if self.spells
            else None,
            "f1": self.f1,
            "median_delay": self.median_delay,
            "median_delay_ci95": list(median_interval(self.delays)),
        }


def score_threshold(
    name: str, threshold: float, traces: Iterable[tuple[list[float], list[bool]]]
) -> Score:
    """Alarms, true alarms, spells, detections and delays of one threshold.

    Args:
        name: The detector's name.
        threshold: The score at which it fires.
        traces: Per episode, (score by step, stuck by step).

    Returns:
        The counts.
    """
    alarms = true_alarms = n_spells = detected = 0
    delays: list[int] = []
    for score, stuck in traces:
        on = [s >= threshold for s in score]
        for t, fired in enumerate(on):
            if fired and (t == 0 or not on[t - 1]):
                alarms += 1
                true_alarms += stuck[t]
        for first, last in spells(stuck):
            n_spells += 1
            hit = next((t for t in range(first, last + 1) if on[t]), None)
            if hit is not None:
                detected += 1
                delays.append(hit - first)
    return Score(name, threshold, alarms, true_alarms, n_spells, detected, tuple(delays))


def score_detectors(
    episodes: Sequence[EpisodeResult],
    k: int = STUCK_K,
    thresholds: Mapping[str, Sequence[float]] = THRESHOLDS,
) -> dict[str, list[Score]]:
    """Every detector at every threshold of ``thresholds``, on the same episodes.

    Args:
        episodes: Episodes with their steps.
        k: The stuck window.
        thresholds: Per detector name, the thresholds to score.

    Returns:
        Per detector, one ``Score`` per threshold, in threshold order.
    """
    truth = [stuck_steps([s.progress for s in e.steps], k) for e in episodes]
    out: dict[str, list[Score]] = {}
    for cls in DETECTORS:
        detector = cls()
        traces = [(scores(detector, e), t) for e, t in zip(episodes, truth, strict=True)]
        out[cls.name] = [score_threshold(cls.name, th, traces) for th in thresholds[cls.name]]
    return out


def best(scored: Mapping[str, Sequence[Score]]) -> Score:
    """The detector and threshold with the highest F1 (ties: the earlier listed)."""
    return max((s for row in scored.values() for s in row), key=lambda s: s.f1)


@dataclass(frozen=True)
class DetectorsBudget:
    """What the study may spend: episodes on each seed, tuning and evaluation (None: the spec's)."""

    episodes: int | None = None


@dataclass
class DetectorsResult:
    """Every detector at every threshold on the evaluation episodes, and the tuned choices."""

    source: str  # how the JSON names the spec
    name: str  # the spec's name
    episodes: int
    seed: int  # the evaluation seed
    k: int
    controller: str
    scored: dict[str, list[Score]]  # on the evaluation episodes
    chosen: dict[str, float]  # per detector, the threshold of highest F1 on tuning episodes
    top: Score  # the best detector and threshold on tuning, scored on evaluation
    wall_seconds: float

    def to_dict(self) -> dict[str, Any]:
        """``detectors.json``: every score, the tuned thresholds and the best one."""
        return {
            "spec": self.source,
            "episodes": self.episodes,
            "seed": self.seed,
            "k": self.k,
            "controller": self.controller,
            "tuning_seed": TUNING_SEED,
            "detectors": {name: [s.as_dict() for s in rows] for name, rows in self.scored.items()},
            "chosen_on_tuning": self.chosen,
            "best": self.top.as_dict(),
            "wall_seconds": self.wall_seconds,
        }

    def table(self) -> TextTable:
        """Each detector at its default threshold and at the one chosen on tuning episodes."""
        return detectors_table(self.scored, self.chosen, self.top, self.to_dict())

    def points(self) -> dict[str, list[tuple[float, float]]]:
        """Per detector, (recall, precision) at each threshold that raised an alarm."""
        return {
            name: [(s.recall, s.precision) for s in rows if not math.isnan(s.precision)]
            for name, rows in self.scored.items()
        }


def detectors(
    spec: ExperimentSpec,
    budget: DetectorsBudget = DetectorsBudget(),
    executor: ExecutorConfig | None = None,
    *,
    k: int = STUCK_K,
    source: str | None = None,
) -> DetectorsResult:
    """Score every detector on tuning and evaluation episodes of the spec's controller.

    The episodes run serially in this process (the detectors need every step of every
    episode, which the executors do not send back), so ``executor`` is accepted for the
    common shape of a study and not used.

    Args:
        spec: The spec; its first controller runs the episodes, on its seed.
        budget: Episodes on each seed (None: the spec's).
        executor: Not used (see above).
        k: The stuck window.
        source: How the JSON names the spec (default: its name).

    Returns:
        The scores.

    Raises:
        SpecError: when the spec's seed is the tuning seed.
    """
    del executor  # serial: see the docstring
    started = time.perf_counter()
    if budget.episodes is not None and budget.episodes != spec.episodes:
        spec = with_overrides(spec, episodes=budget.episodes)
    if spec.seed == TUNING_SEED:
        raise SpecError(
            f"detectors: seed {TUNING_SEED} chooses the thresholds; evaluate on another"
        )
    tuning = score_detectors(list(simulate(spec, spec.episodes, TUNING_SEED)), k)
    scored = score_detectors(list(simulate(spec, spec.episodes, spec.seed)), k)
    chosen = {name: max(rows, key=lambda s: s.f1).threshold for name, rows in tuning.items()}
    top_tuning = best(tuning)
    top = next(s for s in scored[top_tuning.detector] if s.threshold == top_tuning.threshold)
    return DetectorsResult(
        source or spec.name,
        spec.name,
        spec.episodes,
        spec.seed,
        k,
        spec.controller_list()[0].name,
        scored,
        chosen,
        top,
        time.perf_counter() - started,
    )


def _row(s: Score, label: str) -> list[str]:
    d = s.as_dict()
    p, r = d["precision_ci95"], d["recall_ci95"]
    lo, hi = d["median_delay_ci95"]
    return [
        s.detector,
        f"{s.threshold:g}",
        label,
        str(s.alarms),
        f"{s.precision:.1%} [{p[0]:.1%}, {p[1]:.1%}]" if p else "–",
        f"{s.recall:.1%} [{r[0]:.1%}, {r[1]:.1%}]" if r else "–",
        f"{s.median_delay:g} [{lo:g}, {hi:g}]" if s.delays else "–",
        f"{s.f1:.3f}",
    ]


def detectors_table(
    scored: dict[str, list[Score]],
    chosen: dict[str, float],
    top: Score,
    summary: dict[str, Any],
) -> TextTable:
    """Each detector at its default threshold and at the one chosen on tuning episodes."""
    rows = []
    for cls in DETECTORS:
        row = scored[cls.name]
        default = next((s for s in row if s.threshold == cls.default), None)
        tuned = next(s for s in row if s.threshold == chosen[cls.name])
        if default is not None:
            rows.append(_row(default, "default" + (", tuned" if default is tuned else "")))
        if tuned is not default:
            rows.append(_row(tuned, "tuned"))
    spells = top.spells
    notes = [
        f"{summary['episodes']} episodes (seed {summary['seed']}) of {summary['controller']}; "
        f"the detectors watch passively; stuck = no hidden progress for k = {summary['k']} "
        f"steps ({spells} stuck spells)",
        "precision: alarms (rising edges) raised at a stuck step; recall: stuck spells with the "
        "score at the threshold; Wilson 95 %; delay: steps from a spell's onset, median "
        "with its order-statistic 95 % interval",
        f"tuned: the threshold of highest F1 on {summary['episodes']} tuning episodes "
        f"(seed {summary['tuning_seed']}), scored here",
        f"best (F1 on tuning): {top.detector} at {top.threshold:g}: precision "
        f"{top.precision:.1%}, recall {top.recall:.1%}, F1 {top.f1:.3f} (evaluation)",
    ]
    columns = [
        "detector",
        "threshold",
        "",
        "alarms",
        "precision (95% CI)",
        "recall (95% CI)",
        "median delay",
        "F1",
    ]
    return TextTable("stall and loop detectors", columns, rows, notes, left=3, bold=False)
