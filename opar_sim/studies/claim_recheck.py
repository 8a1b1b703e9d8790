"""The confirmatory re-check of the claims on fresh seeds, with episodes planned for 80 % power.

The claims table (``opar_sim.studies.claims``) measures each claim on the evaluation seeds;
its estimate there is the *claimed effect*, frozen below in ``EFFECTS`` (value and the
spread its test's power needs, copied from that run's ``claims.json``).  The re-check runs
every claim again on ``FRESH_SEEDS``, which no claim, default or tuning has used, with the
episodes its test needs for 80 % power at the claimed effect:

* the test is the claim's own (exact McNemar, paired t, exact binomial; two-sided), and its
  power the standard formula of ``opar_sim.measure.power`` (checked against statsmodels);
* the verdict is taken on p Holm-adjusted over the m claims re-checked, so the episodes are
  planned at α/m (Bonferroni, a lower bound on Holm's power): every claim's verdict has at
  least 80 % power at its claimed effect.  The count at α = 0.05 is shown beside it;
* each claim runs at least ``MIN_EPISODES`` and at most ``cap`` episodes (``CAP_EPISODES``
  by default); where the cap binds the row says so and gives the power achieved;
* a claim whose evaluation estimate is not on its claimed side with p < 0.05 has no
  claimed effect (``EFFECTS`` holds None) and is not re-checked: nothing to confirm.

An arm shared by several claims runs the most episodes any of them needs; each claim reads
only its own first episodes of each seed (``measure_claims``).  Command: ``opar-sim claims
--recheck``; ``recheck(only, cap, executor)`` from Python.
"""

from __future__ import annotations

import math
import os
import tempfile
from collections.abc import Callable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from opar_sim.measure.power import episodes_for_power, power
from opar_sim.measure.stats import holm
from opar_sim.measure.table import TextTable
from opar_sim.running.executors import ExecutorConfig, open_executor
from opar_sim.studies.claim_measures import Claim, Value
from opar_sim.studies.claims import (
    ALPHA,
    claim_p,
    format_p,
    format_value,
    measure_claims,
    select_claims,
)
from opar_sim.studies.claims import ClaimResult as _Result
from opar_sim.studies.result import IN_PROCESS
from opar_sim.studies.seeds import FRESH_SEEDS

TARGET_POWER = 0.8
MIN_EPISODES = 100  # per claim, over all fresh seeds
CAP_EPISODES = 4_000  # per claim, over all fresh seeds (2,000 per seed)
CONFIRMED = "confirmed"
NOT_CONFIRMED = "not confirmed"


@dataclass(frozen=True)
class Effect:
    """A claim's estimate on the evaluation seeds: what its re-check is powered for.

    ``value`` is the claim's value (a rate, or a paired difference); ``spread`` the
    discordant share (McNemar) or the SD of the differences (t), None for a rate (its null
    is the claim's); ``per_episode`` the units the measure counts per episode run (1 but
    for the infeasible worlds' share and the rebound's episodes that reach round 13).
    """

    test: str
    value: float
    spread: float | None
    per_episode: float = 1.0


# Frozen from `opar-sim claims` on EVAL_SEEDS (4 × 300 episodes; claims.json's value,
# spread and n / 1200), run once the no-replan arm had its replanning arm's stop threshold
# and before any episode of the re-check ran.  None: not on the claimed side with raw
# p < 0.05 there, so there is no claimed effect to re-check.
EFFECTS: dict[str, Effect | None] = {
    "pid_success": Effect("binomial", 0.8208, None),
    "team_success": Effect("binomial", 0.7442, None),
    "oracle_beats_pid": Effect("mcnemar", 0.1125, 0.1858),
    "oracle_cheaper_than_pid": Effect("t", -2.691e04, 5.808e04),
    "pid_beats_threshold": Effect("mcnemar", 0.03667, 0.1983),
    "pid_beats_threshold_confirm2": Effect("mcnemar", 0.07083, 0.2192),
    "replan_beats_no_replan": Effect("mcnemar", 0.125, 0.2183),
    "closed_loop_beats_open_loop": Effect("mcnemar", 0.5592, 0.5675),
    "pid_beats_stall_counter": Effect("mcnemar", 0.03167, 0.1917),
    "bang_bang_chatters": Effect("t", 3.222, 3.276),
    "bang_bang_costs_success": Effect("mcnemar", -0.1142, 0.3192),
    "bang_bang_default_replans_less": Effect("t", -1.079, 1.703),
    "fixed_interval_chatters": Effect("t", 6.725, 3.993),
    "fixed_interval_chatter_costs": Effect("mcnemar", -0.2617, 0.42),
    "overconfidence_premature": Effect("mcnemar", 0.325, 0.335),
    "overconfident_threshold_confirm2_beats_pid": Effect("mcnemar", 0.0425, 0.2092),
    "overconfident_pid_beats_threshold": Effect("mcnemar", 0.04417, 0.2242),
    "hysteresis_cuts_replans": Effect("t", -0.1108, 0.5184),
    "hysteresis_success": None,
    "guards_cut_replans": Effect("t", -0.4942, 1.508),
    "guards_cut_tokens": Effect("t", -3082, 4.535e04),
    "guards_cost_time": Effect("t", 116.1, 126.6),
    "guards_success": None,
    "pid_gives_up_on_infeasible": Effect("binomial", 1, None, 0.2958),
    "oracle_gives_up_on_infeasible": Effect("binomial", 1, None, 0.2958),
    "give_up_saves_tokens": Effect("t", -2.775e04, 3.948e04),
    "give_up_cost_abandoned": Effect("mcnemar", 0.07167, 0.07167),
    "context_rebound": Effect("t", 0.3441, 0.3557, 0.9292),
    "compression_success": Effect("mcnemar", 0.4208, 0.4758),
    "compression_tokens": Effect("t", -1.564e05, 7.565e04),
    "reflexion_by_attempt_3": Effect("mcnemar", 0.1425, 0.2042),
    "reflexion_by_attempt_5": Effect("mcnemar", 0.1375, 0.1542),
    "faults_do_not_cost_success": Effect("mcnemar", 0.04833, 0.3433),
    "guardrail_success": None,
}


@dataclass(frozen=True)
class Plan:
    """How many fresh episodes a claim runs, and why."""

    units_05: int  # units for 80 % power at two-sided α = 0.05
    units: int  # units for 80 % power at α/m (the verdict's Holm family)
    per_seed: int  # episodes run per fresh seed
    episodes: int  # in all (per_seed × seeds)
    capped: bool  # whether the cap kept it below the count needed
    alpha: float  # the planning level, α/m


def power_args(claim: Claim, effect: Effect) -> tuple[str, float, float | None]:
    """(test, effect, spread) as ``opar_sim.measure.power`` takes them."""
    if effect.test == "binomial":
        return "binomial", effect.value - claim.null, claim.null
    return effect.test, effect.value, effect.spread


def plan_claim(claim: Claim, effect: Effect, seeds: int, m: int, cap: int = CAP_EPISODES) -> Plan:
    """The fresh episodes one claim needs for 80 % power, within [MIN_EPISODES, cap].

    Args:
        claim: The claim.
        effect: Its claimed effect.
        seeds: How many fresh seeds the episodes are split over.
        m: The claims re-checked together (Holm's family; planned at α/m).
        cap: The most episodes the claim may run, over all seeds.

    Returns:
        The plan.
    """
    args = power_args(claim, effect)
    units_05 = episodes_for_power(*args, target=TARGET_POWER, alpha=ALPHA)
    units = episodes_for_power(*args, target=TARGET_POWER, alpha=ALPHA / m)
    wanted = math.ceil(math.ceil(units / effect.per_episode) / seeds)
    low, high = math.ceil(MIN_EPISODES / seeds), max(1, cap // seeds)
    per_seed = min(max(wanted, low), high)
    return Plan(units_05, units, per_seed, per_seed * seeds, wanted > high, ALPHA / m)


def plan_claims(chosen: Sequence[Claim], seeds: int, cap: int = CAP_EPISODES) -> dict[str, Plan]:
    """The plan of every re-checked claim among ``chosen`` (those with a claimed effect)."""
    planned = [(c, e) for c in chosen if (e := EFFECTS.get(c.id)) is not None]
    return {c.id: plan_claim(c, e, seeds, len(planned), cap) for c, e in planned}


def expected_power(claim: Claim, plan: Plan, alpha: float) -> float:
    """The power a plan's episodes give at the claimed effect (units expected per episode)."""
    effect = EFFECTS[claim.id]
    assert effect is not None
    units = max(1, round(plan.episodes * effect.per_episode))
    return power(*power_args(claim, effect), units, alpha)


@dataclass(frozen=True)
class Recheck:
    """One claim re-checked on fresh seeds: its plan, value, p, Holm p, power and verdict."""

    claim: Claim
    effect: Effect
    plan: Plan
    value: Value
    p: float
    p_holm: float
    power: float  # at the claimed effect with the units measured, at α/m
    power_05: float  # the same at α = 0.05
    verdict: str

    def as_dict(self) -> dict[str, Any]:
        """The JSON row of recheck.json."""
        v, pl = self.value, self.plan
        return {
            "id": self.claim.id,
            "test": self.effect.test,
            "claimed_effect": self.effect.value,
            "spread": self.effect.spread,
            "units_for_80pct_power_alpha_0.05": pl.units_05,
            "units_for_80pct_power_alpha_over_m": pl.units,
            "episodes": pl.episodes,
            "episodes_per_seed": pl.per_seed,
            "capped": pl.capped,
            "n": v.n,
            "power": self.power,
            "power_alpha_0.05": self.power_05,
            "value": v.value,
            "ci95": [v.low, v.high],
            "p": self.p,
            "p_holm": self.p_holm,
            "exploratory": self.claim.exploratory or None,
            "verdict": self.verdict,
        }


def judge_recheck(
    chosen: Sequence[Claim], plans: Mapping[str, Plan], values: Sequence[Value]
) -> list[Recheck]:
    """Holm over the re-checked claims, each verdict from its adjusted p and its side."""
    raw = [claim_p(c, v) for c, v in zip(chosen, values, strict=True)]
    adjusted = holm([1.0 if math.isnan(p) else p for p in raw])
    rows = []
    for c, v, p, a in zip(chosen, values, raw, adjusted, strict=True):
        effect, plan = EFFECTS[c.id], plans[c.id]
        assert effect is not None
        args = power_args(c, effect)
        side = v.value > c.null if c.direction > 0 else v.value < c.null
        ok = side and a < ALPHA
        rows.append(
            Recheck(
                c,
                effect,
                plan,
                v,
                p,
                a,
                power(*args, v.n, plan.alpha),
                power(*args, v.n, ALPHA),
                CONFIRMED if ok else NOT_CONFIRMED,
            )
        )
    return rows


def _num(claim: Claim, x: float) -> str:
    return format_value(_Result(claim, Value(x, x, x, 0), ""))[0]


@dataclass
class RecheckResult:
    """The re-checked claims, the ones left out (no claimed effect), seeds and cap."""

    rows: list[Recheck]
    skipped: list[Claim]
    seeds: tuple[int, ...] = FRESH_SEEDS
    cap: int = CAP_EPISODES

    def table(self) -> TextTable:
        """id, test, claimed effect, episodes needed and run, power, fresh value, p, verdict."""
        rows = []
        for r in self.rows:
            value, interval = format_value(_Result(r.claim, r.value, r.verdict))
            needed = math.ceil(r.plan.units / r.effect.per_episode)
            rows.append(
                [
                    r.claim.id + (" *" if r.claim.exploratory else ""),
                    r.effect.test,
                    _num(r.claim, r.effect.value),
                    f"{math.ceil(r.plan.units_05 / r.effect.per_episode):,}",
                    f"{needed:,}",
                    f"{r.plan.episodes:,}" + (" (cap)" if r.plan.capped else ""),
                    f"{r.power:.2f}",
                    value,
                    interval,
                    format_p(r.p),
                    format_p(r.p_holm),
                    r.verdict,
                ]
            )
        m = len(self.rows)
        alpha = f"{ALPHA}/{m} = {ALPHA / m:.2g}" if m else str(ALPHA)
        notes = [
            f"episodes for 80 % power at the claimed effect (the estimate on the evaluation "
            f"seeds), two-sided, with the claim's own test: at α = {ALPHA}, and at α/m = "
            f"{alpha} (Bonferroni over the {m} claims re-checked, a lower bound on Holm's "
            f"power), which is what runs, between {MIN_EPISODES} and the cap, {self.cap:,} "
            "(split over the seeds)",
            "power: at the claimed effect with the episodes run, at α/m; Holm p over the "
            f"claims re-checked; 'confirmed' when Holm p < {ALPHA} on the claimed side",
        ]
        if any(r.claim.exploratory for r in self.rows):
            notes.append(
                "*: exploratory on the evaluation seeds (restated after its result came in); "
                "this re-check is its first confirmatory test"
            )
        if self.skipped:
            notes.append(
                "not re-checked (no claimed effect: not on its side with p < 0.05 on the "
                "evaluation seeds): " + ", ".join(c.id for c in self.skipped)
            )
        return TextTable(
            f"confirmatory re-check: fresh spec seeds {', '.join(map(str, self.seeds))}",
            [
                "id",
                "test",
                "claimed",
                "n (α=.05)",
                "n (α/m)",
                "episodes run",
                "power",
                "fresh value",
                "95% CI",
                "p",
                "Holm p",
                "verdict",
            ],
            rows,
            notes,
            left=2,
        )

    def to_dict(self) -> dict[str, Any]:
        """What ``recheck.json`` holds."""
        return {
            "seeds": list(self.seeds),
            "alpha": ALPHA,
            "target_power": TARGET_POWER,
            "min_episodes": MIN_EPISODES,
            "cap": self.cap,
            "holm_family": len(self.rows),
            "claims": [r.as_dict() for r in self.rows],
            "not_rechecked": [c.id for c in self.skipped],
        }


def run_recheck(
    out: Path,
    chosen: Sequence[Claim],
    *,
    seeds: Sequence[int] = FRESH_SEEDS,
    cap: int = CAP_EPISODES,
    **kwargs: Any,
) -> RecheckResult:
    """Plan, run and judge the re-check of ``chosen`` (``measure_claims``'s other arguments)."""
    plans = plan_claims(chosen, len(seeds), cap)
    todo = [c for c in chosen if c.id in plans]
    values = measure_claims(
        out,
        seeds=seeds,
        episodes={c.id: plans[c.id].per_seed for c in todo},
        selected=todo,
        **kwargs,
    )
    skipped = [c for c in chosen if c.id not in plans]
    return RecheckResult(judge_recheck(todo, plans, values), skipped, tuple(seeds), cap)


def recheck(
    only: Sequence[str] | None = None,
    cap: int = CAP_EPISODES,
    executor: ExecutorConfig = IN_PROCESS,
    *,
    out: str | os.PathLike[str] | None = None,
    root: str | os.PathLike[str] = ".",
    on_progress: Callable[[int], None] | None = None,
    on_start: Callable[[int], None] | None = None,
    resume: bool = False,
    on_note: Callable[[str], None] | None = None,
) -> RecheckResult:
    """Re-check the claims on ``FRESH_SEEDS`` with episodes planned for 80 % power.

    Args:
        only: The claim ids (default: every claim of the registry).
        cap: The most episodes one claim may run, over all fresh seeds.
        executor: Where the episodes run (default: in this process).
        out: Where the arms' run directories go; default a temporary directory.
        root: The directory the claims' spec paths are relative to.
        on_progress: Called with the episodes each finished chunk adds.
        on_start: Called once, before any episode runs, with the episodes in all.
        resume: Finish the run a kill interrupted in ``out`` (``claim_outdir``).
        on_note: Called with each thing ``resume`` repaired or cut.

    Returns:
        Every re-checked claim's plan, value, power and verdict (``.table()``, ``.to_dict()``).

    Raises:
        SpecError: an unknown claim id, or a spec that does not load.
    """
    chosen = select_claims(only)
    with ExitStack() as stack:
        if out is None:
            out = stack.enter_context(tempfile.TemporaryDirectory(prefix="opar-recheck-"))
        with open_executor(executor) as pool:
            return run_recheck(
                Path(out),
                chosen,
                cap=cap,
                root=Path(root),
                executor=pool,
                parallelism=executor.parallelism,
                on_progress=on_progress,
                on_start=on_start,
                resume=resume,
                on_note=on_note,
            )
