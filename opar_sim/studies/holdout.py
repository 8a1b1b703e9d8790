"""Settings scored on the same held-out episodes as the incumbent, paired with it.

``score_holdout`` runs the numbers of ``tune``'s verdict (``opar_sim.studies.recommend``):
for each arm its held-out success (Wilson interval), tokens and REPLANs per episode
(bootstrap intervals) and objective; for each tuned setting its paired differences to the
incumbent (objective, tokens and REPLANs with paired bootstrap intervals, success with the
exact McNemar test) and its objective against the best setting's, from which ``region``
takes the settings that tie the best.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from opar_sim.measure.paired import paired_against, paired_columns
from opar_sim.measure.stats import Estimate, bootstrap_mean, mcnemar_exact, paired_interval
from opar_sim.spec.schema import Objective, ParamRange
from opar_sim.studies.race import Arm

WIDE = 0.25  # a parameter "varies widely" when its tied region spans this share of its range


@dataclass
class VsIncumbent:
    """One setting minus the incumbent on the same held-out episodes."""

    objective: Estimate
    success: float
    only_this: int
    only_incumbent: int
    p_mcnemar: float
    tokens: Estimate
    replans: Estimate

    @property
    def beats(self) -> bool:
        """Better than the incumbent: the objective's interval lies below 0."""
        return self.objective.high < 0

    def to_dict(self) -> dict[str, Any]:
        """The differences (this − incumbent) and the McNemar test."""
        return {
            "objective_diff": self.objective.to_dict(),
            "success_diff": self.success,
            "only_this": self.only_this,
            "only_incumbent": self.only_incumbent,
            "p_mcnemar": self.p_mcnemar,
            "tokens_diff": self.tokens.to_dict(),
            "replans_diff": self.replans.to_dict(),
            "beats_incumbent": self.beats,
        }


@dataclass
class ArmScore:
    """One arm on the held-out episodes: success, tokens, REPLANs, objective, vs incumbent."""

    arm: Arm
    n: int
    success: float
    success_ci95: tuple[float, float]
    tokens: Estimate
    replans: Estimate  # REPLANs per episode
    objective: float
    vs_incumbent: VsIncumbent | None = None  # None for the incumbent itself
    vs_best: Estimate | None = None  # objective − the best setting's (challengers only)

    @property
    def ties_best(self) -> bool:
        """A challenger whose objective interval against the best setting includes 0."""
        return self.vs_best is not None and self.vs_best.low <= 0 <= self.vs_best.high

    def to_dict(self) -> dict[str, Any]:
        """Its held-out numbers."""
        out: dict[str, Any] = {
            "label": self.arm.label,
            "params": self.arm.params,
            "replicates": list(self.arm.replicates),
            "episodes": self.n,
            "success": self.success,
            "success_ci95": list(self.success_ci95),
            "tokens": self.tokens.to_dict(),
            "replans": self.replans.to_dict(),
            "objective": self.objective,
        }
        if self.vs_incumbent is not None:
            out["vs_incumbent"] = self.vs_incumbent.to_dict()
        if self.vs_best is not None:
            out["vs_best_setting"] = {**self.vs_best.to_dict(), "ties": self.ties_best}
        return out


def score_holdout(
    arms: Sequence[Arm],
    row_sets: Sequence[Sequence[Mapping[str, Any]]],
    objective: Objective,
    seed: int,
) -> list[ArmScore]:
    """Every arm on the same held-out episodes, paired with the incumbent (the first arm).

    Args:
        arms: The incumbent first, then the challengers.
        row_sets: Each arm's episode rows, the same episodes.
        objective: The per-episode objective.
        seed: The bootstrap generator's seed (the same for every arm).

    Returns:
        One score per arm, in order.
    """
    cols = paired_columns(row_sets, [a.label for a in arms], objective)
    ordered = [
        sorted(rows, key=lambda r: (str(r.get("spec", "")), int(r["episode"]))) for rows in row_sets
    ]
    replans = [[float(r["replans"]) for r in rows] for rows in ordered]
    out = []
    for k, arm in enumerate(arms):
        pair = paired_against(cols, k, 0, seed)
        versus = None
        if k > 0:
            versus = VsIncumbent(
                objective=pair.objective_diff,
                success=pair.success_diff,
                only_this=pair.discordant[0],
                only_incumbent=pair.discordant[1],
                p_mcnemar=mcnemar_exact(*pair.discordant),
                tokens=pair.tokens_diff,
                replans=paired_interval(replans[k], replans[0], np.random.default_rng(seed)),
            )
        out.append(
            ArmScore(
                arm=arm,
                n=pair.n,
                success=pair.success,
                success_ci95=pair.success_ci95,
                tokens=bootstrap_mean(cols.tokens[k], np.random.default_rng(seed)),
                replans=bootstrap_mean(replans[k], np.random.default_rng(seed)),
                objective=pair.objective,
                vs_incumbent=versus,
            )
        )
    if len(arms) > 1:
        best = min(range(1, len(arms)), key=lambda k: (out[k].objective, k))
        for k in range(1, len(arms)):
            out[k].vs_best = paired_interval(
                cols.scores[k], cols.scores[best], np.random.default_rng(seed)
            )
    return out


def region(
    scores: Sequence[ArmScore], space: Mapping[str, ParamRange]
) -> tuple[dict[str, tuple[float, float]], list[str], bool]:
    """The settings whose held-out objective ties the best's: min–max per parameter.

    Returns:
        (parameter -> (min, max), the tied arms' labels, whether some parameter spans at
        least ``WIDE`` of its search range: on the log scale for a log range).
    """
    tied = [s for s in scores if s.ties_best and s.arm.params is not None]
    spans: dict[str, tuple[float, float]] = {}
    wide = False
    for path, r in space.items():
        values = [float(s.arm.params[path]) for s in tied if s.arm.params and path in s.arm.params]
        if not values:
            continue
        low, high = min(values), max(values)
        spans[path] = (low, high)
        scale = (lambda x: math.log(x)) if r.log else (lambda x: x)
        width = scale(r.high) - scale(r.low)
        wide = wide or (width > 0 and (scale(high) - scale(low)) / width >= WIDE)
    return spans, [s.arm.label for s in tied], wide
