"""Paired held-out statistics of laws run on the same episodes: ablate, shootout, refit.

These commands run several laws (arms or contenders) on the same held-out
episodes (common random numbers) and compare each against a reference: the
success difference with the exact McNemar test on the discordant pairs, and
the objective and token differences with paired bootstrap intervals.  They
differ only in the family of tests Holm corrects (the arms against the
reference; every pair of contenders) and in how the reference is chosen, so
those stay with them and the rest is here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from opar_sim.measure.stats import Estimate, discordant, paired_interval, wilson_interval
from opar_sim.spec.schema import Objective


@dataclass(frozen=True)
class Columns:
    """Per-law columns over the same episodes, in episode order."""

    episodes: list[tuple[str, int]]  # (spec, episode): pooled runs pair within each spec
    wins: list[list[bool]]
    scores: list[list[float]]
    tokens: list[list[float]]

    @property
    def n(self) -> int:
        """The number of paired episodes."""
        return len(self.episodes)

    def rate(self, k: int) -> float:
        """Law ``k``'s held-out success rate (nan with no episodes)."""
        return float(np.mean(self.wins[k])) if self.n else float("nan")

    def objective(self, k: int) -> float:
        """Law ``k``'s mean per-episode objective."""
        return float(np.mean(self.scores[k]))


def paired_columns(
    row_sets: Sequence[Sequence[Mapping[str, Any]]], names: Sequence[str], objective: Objective
) -> Columns:
    """The success, objective and token columns of laws run on the same episodes.

    Args:
        row_sets: Each law's episode rows (``episodes.jsonl`` rows), in any order.
        names: The laws' names, for the error message.
        objective: The per-episode objective.

    Returns:
        The columns, every law's rows sorted by (spec, episode).

    Raises:
        ValueError: when a law was not run on the same episodes as the first.
    """
    ordered = [sorted(rows, key=_key) for rows in row_sets]
    episodes = [_key(r) for r in ordered[0]] if ordered else []
    for name, rows in zip(names, ordered, strict=True):
        if [_key(r) for r in rows] != episodes:
            raise ValueError(f"{name!r} was not run on the same held-out episodes")
    return Columns(
        episodes=episodes,
        wins=[[bool(r["success"]) for r in rows] for rows in ordered],
        scores=[[objective.episode_score(r) for r in rows] for rows in ordered],
        tokens=[[float(r["tokens"]) for r in rows] for rows in ordered],
    )


def _key(row: Mapping[str, Any]) -> tuple[str, int]:
    return (str(row.get("spec", "")), int(row["episode"]))


@dataclass(frozen=True)
class Paired:
    """One law's held-out result and its paired differences against a reference law."""

    n: int
    success: float
    success_ci95: tuple[float, float]
    mean_tokens: float
    objective: float
    success_diff: float  # this − reference
    discordant: tuple[int, int]  # (only this succeeded, only the reference succeeded)
    objective_diff: Estimate  # this − reference
    tokens_diff: Estimate  # this − reference

    def as_fields(self) -> dict[str, Any]:
        """The fields by name, shallow (``asdict`` would turn the Estimates into dicts)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


def paired_against(cols: Columns, k: int, ref: int, seed: int) -> Paired:
    """Law ``k`` against law ``ref`` on the same episodes (zero differences when k is ref).

    Args:
        cols: The laws' columns.
        k: The law described.
        ref: The reference law.
        seed: The bootstrap generator's seed (the same for every law, so the
            intervals resample the same episodes).

    Returns:
        Its success with the Wilson interval, mean tokens and objective, and the
        paired differences against the reference.
    """
    rate = cols.rate(k)
    return Paired(
        n=cols.n,
        success=rate,
        success_ci95=wilson_interval(sum(cols.wins[k]), cols.n),
        mean_tokens=float(np.mean(cols.tokens[k])),
        objective=cols.objective(k),
        success_diff=rate - cols.rate(ref),
        discordant=discordant(cols.wins[k], cols.wins[ref]),
        objective_diff=paired_interval(
            cols.scores[k], cols.scores[ref], np.random.default_rng(seed)
        ),
        tokens_diff=paired_interval(cols.tokens[k], cols.tokens[ref], np.random.default_rng(seed)),
    )
