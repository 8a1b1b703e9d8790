"""What a claim is, and the measures that compute its value with a 95 % interval.

A ``Claim`` is a sentence of the docs, the arms it compares (a shipped spec with
dotted-path overrides, and which of its controllers) and a measure: a function of the
arms' episodes (``ArmData``, keyed by the world each saw) that returns the claimed
``Value``.  A rate comes with a Wilson interval (its exact binomial test against the
claim's null value is taken by the runner, which knows the null); a difference of means
with a paired bootstrap interval (``paired_interval``, seeded by ``BOOTSTRAP_SEED``) and
the paired t test; a difference of success rates with the bootstrap interval and the exact
McNemar test.  Each ``Value`` names its test and the spread its power needs
(``opar_sim.measure.power``).  The claims themselves are listed in
``opar_sim.studies.claim_registry``; ``opar_sim.studies.claims`` runs them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from opar_sim.measure.power import t_test_p
from opar_sim.measure.stats import (
    discordant,
    mcnemar_exact,
    paired_interval,
    success_rate,
)

BOOTSTRAP_SEED = 20_261_201
EARLY = (5, 8)  # the rebound study's windows (opar_sim.studies.memory)
LATE = (13, 20)

Key = tuple[int, int]  # (spec seed, episode index): the world an episode saw


@dataclass(frozen=True)
class Arm:
    """One shipped spec with dotted-path overrides; ``controller`` picks a compared controller."""

    spec: str
    overrides: Mapping[str, Any] = field(default_factory=dict)
    controller: str | None = None
    steps: bool = False  # whether the measure reads steps.jsonl

    @property
    def run_key(self) -> tuple[str, str, bool]:
        """Arms with the same key share one run."""
        return (self.spec, repr(sorted(self.overrides.items())), self.steps)


@dataclass
class ArmData:
    """One arm's episodes (and steps, when asked), keyed by the world they saw."""

    episodes: dict[Key, list[dict[str, Any]]]  # every attempt of that world, in order
    steps: dict[Key, list[dict[str, Any]]] = field(default_factory=dict)

    def first(self) -> dict[Key, dict[str, Any]]:
        """The first attempt of every world."""
        return {k: rows[0] for k, rows in self.episodes.items()}


@dataclass(frozen=True)
class Value:
    """A claimed value with its 95 % interval, its test's two-sided p and the test's spread.

    ``test`` is ``"mcnemar"`` (paired success shares; ``spread`` the share of discordant
    pairs), ``"t"`` (a paired mean difference; ``spread`` the SD of the differences) or
    ``"binomial"`` (a rate; ``p`` is filled in by the runner against the claim's null).
    """

    value: float
    low: float
    high: float
    n: int
    p: float | None = None
    test: str = "t"
    spread: float | None = None


@dataclass(frozen=True)
class Claim:
    """A README sentence and how to check it.

    ``null`` and ``direction`` state what the claim asserts: the value is above
    ``null`` (direction +1) or below it (direction -1).  ``exploratory`` says why a
    claim is not confirmatory on the evaluation seeds (it was restated after its result
    came in); such a claim is tested and shown apart, and its verdict is "exploratory".
    """

    id: str
    sentence: str
    arms: Mapping[str, Arm]
    measure: Callable[[Mapping[str, ArmData]], Value]
    null: float = 0.0
    direction: int = 1
    unit: str = "pts"  # "pts": percentage points (×100), "%": a rate (×100), "": as is
    exploratory: str = ""  # why, when the claim was stated after its result


def _rng() -> np.random.Generator:
    return np.random.default_rng(BOOTSTRAP_SEED)


def _paired(a: Mapping[Key, float], b: Mapping[Key, float], *, successes: bool = False) -> Value:
    keys = sorted(set(a) & set(b))
    xa, xb = [a[k] for k in keys], [b[k] for k in keys]
    est = paired_interval(xa, xb, _rng())
    if successes:
        only_a, only_b = discordant([bool(x) for x in xa], [bool(x) for x in xb])
        share = (only_a + only_b) / len(keys) if keys else math.nan
        return Value(
            est.mean, est.low, est.high, est.n, mcnemar_exact(only_a, only_b), "mcnemar", share
        )
    diffs = [x - y for x, y in zip(xa, xb, strict=True)]
    sd = float(np.std(diffs, ddof=1)) if len(diffs) > 1 else math.nan
    return Value(est.mean, est.low, est.high, est.n, t_test_p(diffs), "t", sd)


def field_of(name: str, rows: Mapping[Key, dict[str, Any]]) -> dict[Key, float]:
    """One numeric episode field per world (booleans as 0/1)."""
    return {k: float(r[name]) for k, r in rows.items()}


def outcome_is(label: str, rows: Mapping[Key, dict[str, Any]]) -> dict[Key, float]:
    """1 where the episode's outcome is ``label``, else 0."""
    return {k: float(r["outcome"] == label) for k, r in rows.items()}


def rate(arm: str, name: str = "success") -> Callable[[Mapping[str, ArmData]], Value]:
    """The share of ``arm``'s episodes with a true ``name`` field, with its Wilson interval."""

    def measure(data: Mapping[str, ArmData]) -> Value:
        rows = data[arm].first()
        hits = sum(bool(r[name]) for r in rows.values())
        p = success_rate(hits, len(rows))
        return Value(p.rate, p.low, p.high, p.n, test="binomial")

    return measure


def difference(a: str, b: str, name: str = "success") -> Callable[[Mapping[str, ArmData]], Value]:
    """Mean of a − b of an episode field over paired worlds; McNemar for ``success``."""

    def measure(data: Mapping[str, ArmData]) -> Value:
        return _paired(
            field_of(name, data[a].first()),
            field_of(name, data[b].first()),
            successes=name == "success",
        )

    return measure


def outcome_difference(a: str, b: str, label: str) -> Callable[[Mapping[str, ArmData]], Value]:
    """Paired difference of the share of episodes ending ``label``, with McNemar."""

    def measure(data: Mapping[str, ArmData]) -> Value:
        return _paired(
            outcome_is(label, data[a].first()),
            outcome_is(label, data[b].first()),
            successes=True,
        )

    return measure


def infeasible_rate(arm: str, label: str) -> Callable[[Mapping[str, ArmData]], Value]:
    """The share of the infeasible worlds that end ``label`` (Wilson)."""

    def measure(data: Mapping[str, ArmData]) -> Value:
        rows = [r for r in data[arm].first().values() if not r["feasible"]]
        p = success_rate(sum(r["outcome"] == label for r in rows), len(rows))
        return Value(p.rate, p.low, p.high, p.n, test="binomial")

    return measure


def solved_by(rows: Sequence[dict[str, Any]], attempt: int) -> float:
    """1 when some attempt up to ``attempt`` of one world succeeded."""
    return float(any(r["success"] and int(r["attempt"]) <= attempt for r in rows))


def learning_difference(a: str, b: str, attempt: int) -> Callable[[Mapping[str, ArmData]], Value]:
    """Paired difference of the share of worlds solved by ``attempt``, with McNemar."""

    def measure(data: Mapping[str, ArmData]) -> Value:
        return _paired(
            {k: solved_by(r, attempt) for k, r in data[a].episodes.items()},
            {k: solved_by(r, attempt) for k, r in data[b].episodes.items()},
            successes=True,
        )

    return measure


def window_error(steps: Sequence[dict[str, Any]], lo: int, hi: int) -> float:
    """The share of non-expert actions among one episode's steps lo..hi (NaN if none)."""
    part = [0.0 if s["expert"] else 1.0 for s in steps if lo <= int(s["step"]) <= hi]
    return sum(part) / len(part) if part else math.nan


def rebound(arm: str) -> Callable[[Mapping[str, ArmData]], Value]:
    """Within episode: wrong-action share in rounds 13–20 minus rounds 5–8 (paired bootstrap)."""

    def measure(data: Mapping[str, ArmData]) -> Value:
        late, early = {}, {}
        for k, steps in data[arm].steps.items():
            lt, er = window_error(steps, *LATE), window_error(steps, *EARLY)
            if not (math.isnan(lt) or math.isnan(er)):
                late[k], early[k] = lt, er
        return _paired(late, early)

    return measure
