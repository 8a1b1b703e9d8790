"""The held-out verdict of ``tune``: every replicate's setting against the incumbent, one answer.

After the race (``opar_sim.studies.race``) the incumbent (the spec's current gains) and
every distinct replicate setting run on the same held-out episodes (the spec's
``[tune] holdout_seed``, by default the ledger's ``RELEASE_HOLDOUT_SEED``).  Each setting
is paired with the incumbent episode by episode: the objective difference with a paired
bootstrap interval, the success difference with the exact McNemar test, tokens and
REPLANs with paired intervals.  Only the race's winner can be recommended, and only when
its objective interval lies below 0 (better than the incumbent); otherwise the answer is
"keep your current gains", with the numbers.  The other replicates are descriptive: how
many of the R beat the incumbent, and the *region* of settings whose held-out objective
ties the best one's (its interval against the best includes 0), min–max per parameter.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from opar_sim.measure.stats import Estimate
from opar_sim.measure.table import TextTable
from opar_sim.spec.schema import Objective, ParamRange
from opar_sim.studies.gains import Replicate, toml_snippet
from opar_sim.studies.holdout import ArmScore, region, score_holdout
from opar_sim.studies.race import INCUMBENT, Race

__all__ = ["ArmScore", "TuneResult", "score_holdout"]


def _num(value: float | None) -> str:
    if value is None:
        return "(not set)"
    return str(value) if isinstance(value, int) else f"{value:.3g}"


def _est(e: Estimate, scale: float = 1.0, fmt: str = ".1f") -> str:
    return f"{e.mean * scale:{fmt}} [{e.low * scale:{fmt}}, {e.high * scale:{fmt}}]"


def _p(p: float) -> str:
    return f"{p:.2g}" if p < 0.001 else f"{p:.3f}"


def _gains(params: Mapping[str, float | None]) -> str:
    return ", ".join(f"{path.rsplit('.', 1)[-1]}={_num(v)}" for path, v in params.items())


@dataclass
class TuneResult:
    """The outcome of ``tune``: R replicates, the race, the held-out scores, one answer."""

    name: str  # the spec's
    law: str  # the spec's controller
    space: dict[str, ParamRange]
    objective: Objective
    incumbent: dict[str, float | None]  # the spec's current values at the space's paths
    replicates: list[Replicate]
    race: Race
    holdout: list[ArmScore]  # the incumbent first
    holdout_seed: int
    engine: str = "simpy"
    finalists: int = 5
    seed_offset: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def incumbent_score(self) -> ArmScore:
        """The incumbent's held-out score."""
        return self.holdout[0]

    @property
    def winner(self) -> ArmScore:
        """The race winner's held-out score."""
        label = self.race.winner.label
        return next(s for s in self.holdout if s.arm.label == label)

    @property
    def recommended(self) -> bool:
        """The race winner beats the incumbent on the held-out episodes."""
        versus = self.winner.vs_incumbent
        return versus is not None and versus.beats

    @property
    def beating(self) -> int:
        """How many of the R replicates found a setting that beats the incumbent held out."""
        return sum(
            len(s.arm.replicates) for s in self.holdout if s.vs_incumbent and s.vs_incumbent.beats
        )

    @property
    def gains(self) -> dict[str, float | None]:
        """What to run: the winner's setting when recommended, else the incumbent's values."""
        if self.recommended and self.winner.arm.params is not None:
            return dict(self.winner.arm.params)
        return dict(self.incumbent)

    def region(self) -> tuple[dict[str, tuple[float, float]], list[str], bool]:
        """The tied settings' region (``region``)."""
        return region(self.holdout, self.space)

    def verdict(self) -> str:
        """One sentence: use the tuned gains, or keep the current ones, with the numbers."""
        w, versus = self.winner, self.winner.vs_incumbent
        assert versus is not None
        numbers = (
            f"held-out objective {w.objective:.4f} against {self.incumbent_score.objective:.4f} "
            f"(Δ {_est(versus.objective, 1.0, '+.4f')}, lower is better), success "
            f"{100 * w.success:.1f} % against {100 * self.incumbent_score.success:.1f} % "
            f"(McNemar p {_p(versus.p_mcnemar)}), {w.n} episodes of seed {self.holdout_seed}"
        )
        count = f"{self.beating} of {len(self.replicates)} replicates beat your current gains"
        if self.recommended:
            return (
                f"use the tuned gains ({w.arm.label}, the race's winner): they beat your current "
                f"gains on held-out episodes, {numbers}; {count}"
            )
        side = "worse than them" if versus.objective.low > 0 else "not distinguishable from them"
        caveat = (
            " (picked on the held-out seed after the race chose another, a setting is no "
            "recommendation: that choice would bias its comparison)"
            if self.beating
            else ""
        )
        return (
            f"keep your current gains: the race's winner {w.arm.label} does not beat them on "
            f"held-out episodes (it is {side}: {numbers}); {count}{caveat}"
        )

    def table(self) -> TextTable:
        """The recommendation block: law, gains (or region), held-out numbers, the verdict."""
        inc, w = self.incumbent_score, self.winner
        pick = w if self.recommended else inc
        versus = w.vs_incumbent
        assert versus is not None
        spans, tied, wide = self.region()
        rows = [
            ["verdict", "use the tuned gains" if self.recommended else "keep your current gains"],
            ["law", self.law],
            ["gains", _gains(self.gains)],
        ]
        if len(tied) > 1:
            rows.append(
                [
                    f"region ({len(tied)} settings tie the best held out"
                    + (", varying widely" if wide else "")
                    + ")",
                    ", ".join(
                        f"{p.rsplit('.', 1)[-1]} {_num(lo)}–{_num(hi)}"
                        for p, (lo, hi) in spans.items()
                    ),
                ]
            )
        rows += [
            [
                "held-out success",
                f"{100 * pick.success:.1f} % [{100 * pick.success_ci95[0]:.1f}, "
                f"{100 * pick.success_ci95[1]:.1f}]",
            ],
            ["tokens per episode", _est(pick.tokens, 1.0, ".0f")],
            ["REPLANs per episode", _est(pick.replans, 1.0, ".2f")],
            [
                f"tuned ({w.arm.label}) − current: objective",
                _est(versus.objective, 1.0, "+.4f") + " (lower is better)",
            ],
            [
                "tuned − current: success",
                f"{100 * versus.success:+.1f} pts ({versus.only_this}/{versus.only_incumbent} "
                f"episodes only one solved, McNemar p {_p(versus.p_mcnemar)})",
            ],
            ["tuned − current: tokens", _est(versus.tokens, 1.0, "+.0f")],
            ["tuned − current: REPLANs", _est(versus.replans, 1.0, "+.2f")],
            [
                "replicates beating current",
                f"{self.beating} of {len(self.replicates)}",
            ],
        ]
        notes = [self.verdict(), *self.protocol_lines()]
        return TextTable("recommendation", ["", "value"], rows, notes, left=2, bold=False)

    def protocol_lines(self) -> list[str]:
        """How the answer was reached, with every seed."""
        reps = self.replicates
        trials = len(reps[0].trials)
        race = self.race
        return [
            f"{len(reps)} replicates × {trials} trials; replicate r trains on tuning seed "
            f"{', '.join(str(r.train_seed) for r in reps)} (sampler seed "
            f"{', '.join(str(r.sampler_seed) for r in reps)})"
            + (", trials screened on the batch engine" if self.engine == "batch" else ""),
            f"race: successive halving of the {len(race.arms) - 1} distinct settings and your "
            f"current gains on seed {race.seed}, rounds of "
            f"{', '.join(str(r.episodes) for r in race.rounds)} episodes (common random numbers)",
            f"held out: every setting and your current gains on {self.incumbent_score.n} "
            f"episodes of seed {self.holdout_seed}, paired; intervals: paired bootstrap 95 %",
        ]

    def arms_table(self) -> TextTable:
        """Every setting on the held-out episodes against the incumbent."""
        columns = [
            "setting",
            "held-out success % [95% CI]",
            "objective",
            "Δ objective vs current [95% CI]",
            "Δ success pts",
            "McNemar p",
            "tokens",
            "REPLANs/ep",
        ]
        rows = []
        challengers = self.holdout[1:]
        best = min(challengers, key=lambda c: c.objective).arm.label if challengers else None
        for s in self.holdout:
            name = "current gains" if s.arm.label == INCUMBENT else s.arm.label
            marks = ["race winner"] if s is self.winner else []
            if s.arm.label == best:
                marks.append("best held out")
            elif s.ties_best:
                marks.append("ties best")
            name += f" ({', '.join(marks)})" if marks else ""
            v = s.vs_incumbent
            rows.append(
                [
                    name,
                    f"{100 * s.success:.1f} [{100 * s.success_ci95[0]:.1f}, "
                    f"{100 * s.success_ci95[1]:.1f}]",
                    f"{s.objective:.4f}",
                    "" if v is None else _est(v.objective, 1.0, "+.4f"),
                    "" if v is None else f"{100 * v.success:+.1f}",
                    "" if v is None else _p(v.p_mcnemar),
                    f"{s.tokens.mean:.0f}",
                    f"{s.replans.mean:.2f}",
                ]
            )
        notes = [
            "ties best: objective interval against the best setting includes 0; "
            "rN: the replicate(s) whose search found the setting"
        ]
        return TextTable(
            "held out", columns, rows, notes, left=1, bold=False, priority=(0, 0, 2, 0, 1, 1, 2, 2)
        )

    def replicates_table(self) -> TextTable:
        """Each replicate: its seeds, its best setting and training objective, its race."""
        columns = ["replicate", "best gains", "train objective", "training seed", "sampler seed"]
        rows = [
            [
                f"r{r.index}",
                _gains(r.best_params),
                f"{r.best_train_score:.4f}",
                str(r.train_seed),
                str(r.sampler_seed),
            ]
            for r in self.replicates
        ]
        notes = (
            ["train objective: the winning finalist's SimPy re-score on its training episodes"]
            if self.engine == "batch"
            else []
        )
        return TextTable("replicates", columns, rows, notes, left=2, bold=False)

    def race_table(self) -> TextTable:
        """Each round of the race: every arm's objective and success on its episodes."""
        rounds = self.race.rounds
        columns = ["setting"] + [f"round {j + 1}: {r.episodes} ep" for j, r in enumerate(rounds)]
        rows = []
        for arm in self.race.arms:
            name = "current gains" if arm.label == INCUMBENT else arm.label
            cells = [
                f"{r.objective[arm.label]:.4f} ({100 * r.success[arm.label]:.1f} %)"
                if arm.label in r.objective
                else ""
                for r in rounds
            ]
            rows.append([name, *cells])
        notes = [
            f"objective (success) on episodes 0..n−1 of seed {self.race.seed}; after each round "
            f"the better half of the tuned settings goes on; winner: {self.race.winner.label}"
        ]
        return TextTable("race (successive halving)", columns, rows, notes, left=1, bold=False)

    def best_toml(self) -> str:
        """``best.toml``: the recommendation, or the incumbent, with a comment saying which."""
        if self.recommended:
            head = (
                f"# recommended by opar-sim tune ({self.name}): the race winner "
                f"{self.winner.arm.label} beats the spec's current gains on "
                f"{self.winner.n} held-out episodes (seed {self.holdout_seed})\n"
            )
        else:
            head = (
                f"# keep your current gains: the race's winner {self.winner.arm.label} does not "
                f"beat them on {self.winner.n} held-out episodes (seed {self.holdout_seed}); "
                "these are the spec's current values\n"
            )
        return head + toml_snippet(self.gains)

    def to_dict(self) -> dict[str, Any]:
        """What ``tune.json`` holds: protocol, replicates, race, held-out scores, the answer."""
        spans, tied, wide = self.region()
        w, inc = self.winner, self.incumbent_score
        versus = w.vs_incumbent
        assert versus is not None
        first = self.replicates[w.arm.replicates[0]] if w.arm.replicates else self.replicates[0]
        summary: dict[str, Any] = {
            "best_params": dict(w.arm.params or {}),
            "best_train_score": first.best_train_score,
            "importances": first.importances,
            "holdout": {
                "default_score": inc.objective,
                "best_score": w.objective,
                "improvement": -versus.objective.mean,
                "improvement_ci95": [-versus.objective.high, -versus.objective.low],
                "default_success": inc.success,
                "best_success": w.success,
            },
            "protocol": {
                "replicates": len(self.replicates),
                "seed_offset": self.seed_offset,
                "train_seeds": [r.train_seed for r in self.replicates],
                "sampler_seeds": [r.sampler_seed for r in self.replicates],
                "race": "successive halving",
                "confirm_seed": self.race.seed,
                "confirm_episodes": self.race.episodes,
                "holdout_seed": self.holdout_seed,
                "holdout_episodes": inc.n,
                "objective": self.objective.model_dump(),
                "engines": (
                    {"trials": "batch", "finalists": "simpy", "race": "simpy", "holdout": "simpy"}
                    if self.engine == "batch"
                    else {"trials": "simpy", "race": "simpy", "holdout": "simpy"}
                ),
            },
            "replicates": [r.to_dict() for r in self.replicates],
            "race": self.race.to_dict(),
            "holdout_arms": [s.to_dict() for s in self.holdout],
            "recommendation": {
                "verdict": "use the tuned gains" if self.recommended else "keep your current gains",
                "recommended": self.recommended,
                "law": self.law,
                "gains": self.gains,
                "incumbent": self.incumbent,
                "region": {p: list(v) for p, v in spans.items()},
                "region_settings": tied,
                "region_wide": wide,
                "success": (w if self.recommended else inc).success,
                "success_ci95": list((w if self.recommended else inc).success_ci95),
                "tokens": (w if self.recommended else inc).tokens.to_dict(),
                "replans": (w if self.recommended else inc).replans.to_dict(),
                "winner": w.arm.label,
                "winner_vs_incumbent": versus.to_dict(),
                "replicates_beating_incumbent": self.beating,
                "sentence": self.verdict(),
            },
        }
        if self.engine == "batch":
            summary["engines"] = {"trials": "batch", "finalists": "simpy", "holdout": "simpy"}
        return summary
