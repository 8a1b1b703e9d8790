"""What a replicated shoot-out reports: its protocol, its tables and ``shootout.json``.

``ShootoutResult`` holds the ranking of ``opar_sim.studies.replicated`` with the budget it
was reached with; its tables are the ranking (``table``), tuning against the shipped
defaults (``defaults_table``), the replicate-level comparisons (``comparisons_table``) and
every replicate's tuned setting (``params_table``); ``protocol_lines`` is the printed
protocol, the budget rule and what was fitted outside the budget included.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from opar_sim.measure.replicates import ReplicateDiff
from opar_sim.measure.table import TextTable
from opar_sim.spec.schema import Objective
from opar_sim.studies.replicated import ALPHA, LawStanding, Ranking
from opar_sim.studies.seeds import RELEASE_HOLDOUT_SEED, replicate_seeds

Engine = Literal["simpy", "batch"]

# What a law brings that was fitted on simulated episodes outside the shoot-out's budget.
OUTSIDE_BUDGET = {
    "bayes": "bayes's model of the loop (a five-state hidden chain) was fitted outside this "
    "budget: about 15 rounds of 600-2,000 flight_booking episodes on tuning seed 100, with "
    "the task's own settings read from the spec (docs/bayes.md); it refuses other tasks",
    "sprt": "sprt's likelihood tables and calibrated boundaries come from 4,000 episodes of "
    "flight_booking_infeasible on tuning seed 100 (2,000 for the tables, 2,000 for the "
    "boundaries; docs/sprt.md), outside this budget; "
    "on another task it runs with those tables, and a caution says so",
}
COMPARISON = (
    "replicate-level paired t (R - 1 df; standard error with the held-out episodes' sampling "
    "variance), Holm over the comparisons to the leader"
)
DEFAULTS_FIT = (
    "every law's shipped defaults were fitted by `opar-sim refit` (40 TPE trials × 300 episodes "
    "per task on both shoot-out tasks, seed 100), outside this budget"
)


@dataclass(frozen=True)
class ShootoutBudget:
    """What every law gets, counted in simulated episodes: the same rule, seeds and hold-out.

    Trials per replicate = ``trials_per_dim`` × d, d the law's parameters plus the shared
    stop confirmation; each trial runs ``train_episodes`` episodes of the replicate's
    training seed.  Replicate r (of ``replicates``) trains on the ledger's tuning seed
    S·R + r with sampler seed S·R + r (``seed_offset`` S), the same for every law.
    """

    trials_per_dim: int = 5
    train_episodes: int = 300
    holdout_episodes: int = 2000
    replicates: int = 5
    sampler: str = "tpe"
    seed_offset: int = 0
    holdout_seed: int = RELEASE_HOLDOUT_SEED

    def trials(self, dimension: int) -> int:
        """The trials of one replicate of a law with ``dimension`` parameters."""
        return self.trials_per_dim * dimension

    @property
    def seeds(self) -> list[tuple[int, int]]:
        """(training seed, sampler seed) of each replicate, from the ledger."""
        return replicate_seeds(self.replicates, self.seed_offset)


def _pts(x: float) -> str:
    return f"{100 * x:+.1f}"


def _ci(d: ReplicateDiff) -> str:
    if math.isinf(d.low):
        return f"{_pts(d.mean)} [–]"
    return f"{_pts(d.mean)} [{_pts(d.low)}, {_pts(d.high)}]"


def _p(p: float) -> str:
    return f"{p:.2g}" if p < 0.001 else f"{p:.3f}"


def _setting(params: dict[str, float]) -> str:
    return ", ".join(
        f"{path.rsplit('.', 1)[-1]}={value if isinstance(value, int) else f'{value:.3g}'}"
        for path, value in params.items()
    )


@dataclass
class ShootoutResult:
    """A finished replicated shoot-out: the ranking, the budget, what each law spent."""

    name: str  # the spec's
    budget: ShootoutBudget
    objective: Objective
    ranking: Ranking
    engine: Engine = "simpy"
    finalists: int = 5
    screened: dict[str, bool] = field(default_factory=dict)  # law -> trials on the batch engine
    episodes: dict[str, dict[str, Any]] = field(default_factory=dict)  # law -> where it spent
    skipped: dict[str, str] = field(default_factory=dict)  # law -> why it sat out
    wall_seconds: float = 0.0
    cautions: tuple[str, ...] = ()  # "law: why its numbers may not hold on this spec"

    @property
    def standings(self) -> list[LawStanding]:
        """The laws, by rank then mean held-out success."""
        return self.ranking.standings

    def _rank(self, s: LawStanding) -> str:
        shared = sum(o.rank == s.rank for o in self.standings) > 1
        return f"={s.rank}" if shared else str(s.rank)

    def table(self) -> TextTable:
        """The ranking: held-out success across replicates, the comparison with the leader."""
        columns = [
            "rank",
            "law",
            "success % mean (sd)",
            "min–max",
            "Δ vs leader pts [95% CI]",
            "Holm p",
            "tokens",
            "REPLANs/ep",
            "defaults success %",
        ]
        rows = []
        for s in self.standings:
            best = s.name == self.ranking.leader and self.ranking.alone
            versus = s.vs_leader
            rows.append(
                [
                    self._rank(s),
                    s.name + (" (best)" if best else ""),
                    f"{100 * s.success.mean:.1f} ({100 * s.success.sd:.1f})",
                    f"{100 * s.success.low:.1f}–{100 * s.success.high:.1f}",
                    "leader" if versus is None else _ci(versus),
                    "" if versus is None else _p(s.vs_leader_holm),
                    f"{s.tokens.mean:.0f}",
                    f"{s.replans.mean:.2f}",
                    f"{100 * s.defaults['success']:.1f}",
                ]
            )
        title = f"shoot-out ({self.budget.replicates} tuning replicates per law, held out)"
        notes = self.protocol_lines()
        priority = (0, 0, 0, 2, 0, 0, 1, 1, 2)  # on a narrow terminal min–max, defaults go first
        return TextTable(title, columns, rows, notes, left=2, bold=False, priority=priority)

    def defaults_table(self) -> TextTable:
        """Does tuning help?  Each law's replicates against its shipped defaults."""
        columns = [
            "law",
            "defaults success % [95% CI]",
            "defaults tokens",
            "defaults REPLANs/ep",
            "tuned − defaults pts [95% CI]",
            "Holm p",
        ]
        rows = [
            [
                s.name,
                f"{100 * s.defaults['success']:.1f} [{100 * s.defaults['success_ci95'][0]:.1f}, "
                f"{100 * s.defaults['success_ci95'][1]:.1f}]",
                f"{s.defaults['tokens']:.0f}",
                f"{s.defaults['replans']:.2f}",
                _ci(s.tuning_gain),
                _p(s.tuning_gain_holm),
            ]
            for s in self.standings
        ]
        notes = [
            "tuned − defaults: the R replicates' held-out success minus the defaults' on the same "
            f"episodes; t interval (R − 1 df, with the episodes' sampling variance); Holm over "
            f"the {len(rows)} laws",
            DEFAULTS_FIT,
        ]
        return TextTable("tuning against the shipped defaults", columns, rows, notes, left=1)

    def comparisons_table(self) -> TextTable:
        """Each law against the leader, replicate by replicate, and the comparison its rank used."""
        columns = ["law", "replicate differences (pts)", "mean [95% CI]", "sd", "p", "Holm p"]
        rows = []
        for s in self.standings:
            d = s.vs_leader
            if d is None:
                continue
            rows.append(
                [
                    s.name,
                    " ".join(_pts(x) for x in d.diffs),
                    _ci(d),
                    f"{100 * d.sd:.1f}",
                    _p(d.p),
                    _p(s.vs_leader_holm),
                ]
            )
        lower = [
            f"{s.name} vs {s.tier_leader} (Holm p {_p(s.tier_holm)})"
            for s in self.standings
            if s.tier_leader and s.tier_leader != self.ranking.leader
        ]
        notes = [
            f"law − {self.ranking.leader} (the leader), replicate r against replicate r on the "
            "same held-out episodes",
            *(["ranked among the rest: " + "; ".join(lower)] if lower else []),
        ]
        return TextTable("replicate-level comparisons", columns, rows, notes, left=2)

    def params_table(self) -> TextTable:
        """Every replicate's tuned setting, law by law."""
        rows = [
            [s.name if r == 0 else "", f"r{r}", _setting(params)]
            for s in self.standings
            for r, params in enumerate(s.params)
        ]
        notes = (
            ["batch-screened: trials scored on the batch engine, finalists re-scored on SimPy"]
            if any(self.screened.values())
            else []
        )
        return TextTable("tuned settings", ["law", "replicate", "setting"], rows, notes, left=3)

    def protocol_lines(self) -> list[str]:
        """The printed protocol: replicates, the budget rule, seeds, what was fitted outside."""
        b, seeds = self.budget, self.budget.seeds
        dims = ", ".join(f"{s.name} {s.dimension}→{s.trials}" for s in self.standings)
        lines = [
            f"{b.replicates} replicates per law: replicate r trains on tuning seed "
            f"{', '.join(str(t) for t, _ in seeds)} with sampler seed "
            f"{', '.join(str(k) for _, k in seeds)} ({b.sampler}), the same for every law",
            f"budget rule: trials = {b.trials_per_dim} × d per replicate, d = the law's parameters "
            f"+ the shared confirm ({dims}); each trial = {b.train_episodes} training episodes",
            f"held out: every replicate's setting and every law's shipped defaults on "
            f"{b.holdout_episodes} episodes of seed {b.holdout_seed} (common random numbers)",
            "Δ vs leader: replicate r of the law − replicate r of the leader (held-out success), "
            f"t interval with {b.replicates - 1} df (its standard error adds the shared held-out "
            "episodes' sampling variance), Holm over the comparisons to the leader; "
            f"rank: the leader and every law not behind it at Holm p < {ALPHA} share a rank, "
            "the rest are ranked so among themselves; '=' marks a tie; the intervals are not "
            "adjusted for the several comparisons: the Holm p decides",
        ]
        if self.engine == "batch":
            n = sum(self.screened.values())
            lines.append(
                f"trials screened on the batch engine for {n} of {len(self.standings)} laws, "
                f"the {self.finalists} best re-scored on SimPy; held-out episodes on SimPy"
            )
        lines += [OUTSIDE_BUDGET[s.name] for s in self.standings if s.name in OUTSIDE_BUDGET]
        return lines + [f"caution: {line}" for line in self.cautions]

    def to_dict(self) -> dict[str, Any]:
        """What ``shootout.json`` holds: the protocol, every law's standing, the wall time."""
        b = self.budget
        return {
            "protocol": {
                **asdict(b),
                "train_seeds": [t for t, _ in b.seeds],
                "sampler_seeds": [k for _, k in b.seeds],
                "budget_rule": f"trials = {b.trials_per_dim} x d per replicate (d with confirm)",
                "objective": self.objective.model_dump(),
                "alpha": ALPHA,
                "comparison": COMPARISON,
                "engine": (
                    {"trials": "batch", "finalists": self.finalists, "holdout": "simpy"}
                    if self.engine == "batch"
                    else {"trials": "simpy", "holdout": "simpy"}
                ),
                "outside_budget": {
                    s.name: OUTSIDE_BUDGET[s.name]
                    for s in self.standings
                    if s.name in OUTSIDE_BUDGET
                },
                "defaults_fit": DEFAULTS_FIT,
                "lines": self.protocol_lines(),
            },
            "leader": self.ranking.leader,
            "leader_alone": self.ranking.alone,
            "laws": [
                {
                    **s.to_dict(),
                    "trials_engine": "batch" if self.screened.get(s.name) else "simpy",
                    "episodes": self.episodes.get(s.name, {}),
                }
                for s in self.standings
            ],
            "skipped": self.skipped,
            "wall_seconds": self.wall_seconds,
        }
