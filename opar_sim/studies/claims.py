"""Claims as code: every number the docs state (docs/results.md), regenerated on evaluation seeds.

A ``Claim`` (``opar_sim.studies.claim_measures``) is the docs' sentence, the shipped
specs (and overrides) its arms run, and a function that computes the claimed value
with its 95 % interval from the arms' episodes; ``opar_sim.studies.claim_registry``
lists them.  This module runs the arms (each distinct spec once per seed), tests every
claim with its two-sided test (exact McNemar for paired success shares, the paired t test
for paired mean differences, the exact binomial test for a rate against its null value),
adjusts the p-values by Holm over every claim tested in the run, and gives each claim its
verdict from the adjusted p: ``supported`` when it is below 0.05 and the estimate lies on
the claimed side of the null value, ``not significant`` otherwise, and ``exploratory`` for
a claim restated after its result came in (``Claim.exploratory``: tested, in the Holm
family, shown apart, never counted as support).  The confirmatory re-check on fresh seeds,
with episodes planned for 80 % power, is ``opar_sim.studies.claim_recheck``.

Evaluation seeds: spec seeds ``EVAL_SEEDS`` = 0..3, 300 episodes each, pooled
(a pair is the same episode index under the same spec seed, so every arm saw
the same worlds).  Tuning never uses them: ``opar_sim.studies.shootout``
trains on spec seed ``TUNING_SEED`` and scores held-out episodes on ``HOLDOUT_SEED``, and
``[tune]`` specs use their own training and held-out seeds (100..199).

The study is ``claims(only, budget, executor)``: the claims named (default all) on the
budget's seeds and episodes, run into ``out`` (a temporary directory without one).
"""

from __future__ import annotations

import math
import os
import tempfile
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from opar_sim.measure.power import binomial_test_p
from opar_sim.measure.stats import holm
from opar_sim.measure.table import TextTable
from opar_sim.rundir import iter_episodes, iter_steps, write_json
from opar_sim.running.executors import ExecutorConfig, open_executor
from opar_sim.running.runner import run_many
from opar_sim.spec.build import load_spec
from opar_sim.spec.edit import apply_changes
from opar_sim.spec.schema import ExperimentSpec, SpecError
from opar_sim.studies.claim_measures import Arm, ArmData, Claim, Value
from opar_sim.studies.claim_registry import every_claim
from opar_sim.studies.result import IN_PROCESS
from opar_sim.studies.seeds import EVAL_SEEDS, QUICK_SEEDS

EPISODES = 300
QUICK_EPISODES = 40
ALPHA = 0.05
SUPPORTED = "supported"
NOT_SIGNIFICANT = "not significant"
EXPLORATORY = "exploratory"
CLAIM_COLUMNS = ["id", "claim", "value", "95% CI", "p", "Holm p", "verdict"]


@dataclass(frozen=True)
class ClaimResult:
    """A checked claim: its value, interval, raw and Holm-adjusted p, and verdict."""

    claim: Claim
    value: Value
    verdict: str
    p: float = math.nan  # the claim's two-sided test
    p_holm: float = math.nan  # Holm-adjusted over every claim tested in the same run

    def as_dict(self) -> dict[str, Any]:
        """The JSON row of claims.json."""
        c = self.claim
        return {
            "id": c.id,
            "sentence": c.sentence,
            "arms": {
                name: {"spec": a.spec, "overrides": dict(a.overrides), "controller": a.controller}
                for name, a in c.arms.items()
            },
            "null": c.null,
            "direction": c.direction,
            "unit": c.unit,
            "value": self.value.value,
            "ci95": [self.value.low, self.value.high],
            "n": self.value.n,
            "test": self.value.test,
            "spread": self.value.spread,
            "p": self.p,
            "p_holm": self.p_holm,
            "exploratory": c.exploratory or None,
            "verdict": self.verdict,
        }


def verdict(
    value: Value,
    null: float,
    direction: int,
    p_adjusted: float,
    alpha: float = ALPHA,
    exploratory: bool = False,
) -> str:
    """The verdict from the Holm-adjusted p and the estimate's side of the null value.

    Args:
        value: The measured value.
        null: The value the claim must beat.
        direction: +1: the claim is value > null; -1: value < null.
        p_adjusted: The claim's p, Holm-adjusted over the run's claims.
        alpha: The family-wise level.
        exploratory: Whether the claim was restated after its result came in.

    Returns:
        ``exploratory``, ``supported`` or ``not significant``.
    """
    if exploratory:
        return EXPLORATORY
    if math.isnan(value.value) or math.isnan(p_adjusted):
        return NOT_SIGNIFICANT
    side = value.value > null if direction > 0 else value.value < null
    return SUPPORTED if side and p_adjusted < alpha else NOT_SIGNIFICANT


def claim_p(claim: Claim, value: Value) -> float:
    """The claim's two-sided p: its measure's (McNemar, paired t), or the binomial test's."""
    if value.p is not None:
        return value.p
    if value.test == "binomial" and value.n > 0:
        return binomial_test_p(round(value.value * value.n), value.n, claim.null)
    return math.nan


def judge(claims: Sequence[Claim], values: Sequence[Value]) -> list[ClaimResult]:
    """Every claim's raw and Holm-adjusted p (over all of them) and its verdict."""
    raw = [claim_p(c, v) for c, v in zip(claims, values, strict=True)]
    adjusted = holm([1.0 if math.isnan(p) else p for p in raw])
    return [
        ClaimResult(
            c,
            v,
            verdict(v, c.null, c.direction, a, exploratory=bool(c.exploratory)),
            p,
            math.nan if math.isnan(p) else a,
        )
        for c, v, p, a in zip(claims, values, raw, adjusted, strict=True)
    ]


def arm_specs(arm: Arm, root: Path, seeds: Sequence[int], episodes: int) -> list[ExperimentSpec]:
    """The arm's spec once per seed, with its overrides, seed and episode count."""
    base = load_spec(root / arm.spec)
    return [
        apply_changes(base, dict(arm.overrides) | {"seed": s, "episodes": episodes}, arm.spec)
        for s in seeds
    ]


def load_arm(out: Path, seed: int, data: ArmData, controller: str | None, steps: bool) -> None:
    """Add one seed's run directory to ``data`` (only ``controller``'s rows, when given)."""
    for row in iter_episodes(out):
        if controller is None or row["controller"] == controller:
            data.episodes.setdefault((seed, int(row["episode"])), []).append(row)
    if steps:
        for row in iter_steps(out):
            if (controller is None or row["controller"] == controller) and not row.get("parent"):
                data.steps.setdefault((seed, int(row["episode"])), []).append(row)


def first_episodes(data: ArmData, per_seed: int) -> ArmData:
    """``data`` restricted to the episodes 0..per_seed-1 of every seed."""
    return ArmData(
        {k: v for k, v in data.episodes.items() if k[1] < per_seed},
        {k: v for k, v in data.steps.items() if k[1] < per_seed},
    )


def measure_claims(
    out: Path,
    *,
    root: Path = Path("."),
    seeds: Sequence[int] = EVAL_SEEDS,
    episodes: int | Mapping[str, int] = EPISODES,
    selected: Sequence[Claim] | None = None,
    executor: Any = None,
    parallelism: int = 1,
    on_progress: Callable[[int], None] | None = None,
    on_start: Callable[[int], None] | None = None,
    resume: bool = False,
    on_note: Callable[[str], None] | None = None,
) -> list[Value]:
    """Run every arm the claims need (each distinct spec once per seed) and measure each claim.

    With one episode count per claim (``episodes`` maps claim id to episodes per seed), an
    arm runs the most any of its claims needs and each claim reads only its own first
    episodes of every seed (episode i sees the same world whatever the run's length).

    Args:
        out: Where the run directories go (``out/runs/<n>-seed<s>``).
        root: The directory the claims' spec paths are relative to.
        seeds: The spec seeds, pooled.
        episodes: Episodes per seed, for every claim or per claim id.
        selected: The claims to measure (default: all).
        executor: Where the chunks run (None: serially).
        parallelism: The executor's workers.
        on_progress: Called with the episodes each finished chunk adds.
        on_start: Called once, before any episode runs, with the episodes in all.
        resume: Finish the arms' run directories a killed run left in ``out``.
        on_note: Called with each thing ``resume`` repaired or cut, per run directory.

    Returns:
        One value per claim, in order.
    """
    chosen = list(selected) if selected is not None else every_claim()
    count = {c.id: episodes if isinstance(episodes, int) else episodes[c.id] for c in chosen}
    need: dict[tuple[str, str, bool], int] = {}
    arm_of: dict[tuple[str, str, bool], Arm] = {}
    for claim in chosen:
        for arm in claim.arms.values():
            need[arm.run_key] = max(need.get(arm.run_key, 0), count[claim.id])
            arm_of.setdefault(arm.run_key, arm)
    runs: list[tuple[ExperimentSpec, Path]] = []
    where: dict[tuple[tuple[str, str, bool], int], Path] = {}
    for n, (key, arm) in enumerate(arm_of.items()):
        for seed, spec in zip(seeds, arm_specs(arm, root, seeds, need[key]), strict=True):
            path = out / "runs" / f"{n:02d}-{Path(arm.spec).stem}-seed{seed}"
            runs.append((spec, path))
            where[(key, seed)] = path
    if on_start is not None:
        on_start(sum(spec.episodes * len(spec.controller_list()) for spec, _ in runs))
    run_many(
        runs,
        executor=executor,
        parallelism=parallelism,
        on_progress=on_progress,
        resume=resume,
        on_note=on_note,
    )
    cache: dict[tuple[tuple[str, str, bool], str | None], ArmData] = defaultdict(
        lambda: ArmData({})
    )
    values = []
    for claim in chosen:
        data: dict[str, ArmData] = {}
        for name, arm in claim.arms.items():
            ck = (arm.run_key, arm.controller)
            if ck not in cache:
                for seed in seeds:
                    load_arm(where[(arm.run_key, seed)], seed, cache[ck], arm.controller, arm.steps)
            data[name] = first_episodes(cache[ck], count[claim.id])
        values.append(claim.measure(data))
    return values


def run_claims(out: Path, **kwargs: Any) -> list[ClaimResult]:
    """Run and measure the claims (``measure_claims``'s arguments), Holm over them, verdicts.

    Returns:
        One result per claim, in order.
    """
    chosen = list(kwargs.pop("selected", None) or every_claim())
    return judge(chosen, measure_claims(out, selected=chosen, **kwargs))


def total_episodes(seeds: Sequence[int], episodes: int) -> int:
    """How many episodes the default claims run (every controller of every distinct arm)."""
    seen: set[tuple[str, str, bool]] = set()
    total = 0
    for claim in every_claim():
        for arm in claim.arms.values():
            if arm.run_key not in seen:
                seen.add(arm.run_key)
                spec = arm_specs(arm, Path("."), seeds[:1], episodes)[0]
                total += len(spec.controller_list()) * episodes * len(seeds)
    return total


def format_value(result: ClaimResult) -> tuple[str, str]:
    """The value and its interval as printed: points or percent ×100, else 3 significant digits."""
    v, c = result.value, result.claim
    if c.unit in ("pts", "%"):
        sign = "+" if c.unit == "pts" else ""
        suffix = " pts" if c.unit == "pts" else " %"
        return (
            f"{v.value * 100:{sign}.1f}{suffix}",
            f"{v.low * 100:{sign}.1f} to {v.high * 100:{sign}.1f}",
        )
    big = max(abs(v.value), abs(v.low), abs(v.high))
    fmt = "+,.0f" if big >= 100 else "+.2f"
    return f"{v.value:{fmt}}", f"{v.low:{fmt}} to {v.high:{fmt}}"


def format_p(p: float) -> str:
    """A p-value as printed: two significant digits, '–' when there is none."""
    return "–" if math.isnan(p) else f"{p:.2g}"


TESTS_NOTE = (
    "pts: paired difference in percentage points (bootstrap CI, exact McNemar test); "
    "%: a rate (Wilson CI, exact binomial test against the claim's null value); other "
    "values: paired mean differences (bootstrap CI, paired t test); every p two-sided"
)


def holm_note(m: int) -> str:
    """The table's note on the Holm adjustment over ``m`` claims."""
    return (
        f"Holm p: adjusted over all {m} claims tested in this run (exploratory ones included); "
        f"the verdict is 'supported' when Holm p < {ALPHA} and the estimate is on the claimed "
        "side, else 'not significant'"
    )


def claim_rows(results: Sequence[ClaimResult]) -> list[list[str]]:
    """One table row per result: id, claim, value, interval, raw p, Holm p, verdict."""
    rows = []
    for r in results:
        value, interval = format_value(r)
        p, p_holm = format_p(r.p), format_p(r.p_holm)
        rows.append([r.claim.id, r.claim.sentence, value, interval, p, p_holm, r.verdict])
    return rows


def claims_json(
    results: Sequence[ClaimResult], seeds: Sequence[int], episodes: int
) -> dict[str, Any]:
    """What claims.json holds."""
    return {
        "seeds": list(seeds),
        "episodes_per_seed": episodes,
        "alpha": ALPHA,
        "holm_family": len(results),
        "claims": [r.as_dict() for r in results],
    }


def write_claims(path: Path, results: Sequence[ClaimResult], seeds: Sequence[int], n: int) -> None:
    """Write claims.json."""
    write_json(path, claims_json(results, seeds, n))


@dataclass(frozen=True)
class ClaimsBudget:
    """The evaluation seeds the claims pool and the episodes each seed runs per arm."""

    seeds: tuple[int, ...] = EVAL_SEEDS
    episodes: int = EPISODES


DEFAULT_BUDGET = ClaimsBudget()  # the docs' numbers: seeds 0..3, 300 episodes each
QUICK = ClaimsBudget(QUICK_SEEDS, QUICK_EPISODES)  # `claims --quick`: a smoke test


@dataclass
class ClaimsResult:
    """Every checked claim, on the budget's seeds and episodes."""

    results: list[ClaimResult]
    budget: ClaimsBudget = DEFAULT_BUDGET

    def table(self) -> TextTable:
        """The claims table: id, claim, value, 95 % interval, p, Holm p, verdict.

        Exploratory claims are not in it: ``exploratory_table`` shows them apart.
        """
        seeds, episodes = self.budget.seeds, self.budget.episodes
        return TextTable(
            f"claims: spec seeds {', '.join(map(str, seeds))}, {episodes} episodes each, pooled",
            CLAIM_COLUMNS,
            claim_rows([r for r in self.results if not r.claim.exploratory]),
            [TESTS_NOTE, holm_note(len(self.results))],
            left=2,
        )

    def exploratory_table(self) -> TextTable | None:
        """The claims restated after their results came in, with why (None: there are none)."""
        chosen = [r for r in self.results if r.claim.exploratory]
        if not chosen:
            return None
        rows = claim_rows(chosen)
        notes = [f"{r.claim.id}: {r.claim.exploratory}" for r in chosen]
        return TextTable(
            "exploratory claims (restated after their results came in; not evidence on "
            "these seeds: the fresh-seed re-check, `claims --recheck`, is their test)",
            CLAIM_COLUMNS,
            rows,
            [*notes, "p and Holm p as in the table above (the same Holm family)"],
            left=2,
        )

    def to_dict(self) -> dict[str, Any]:
        """What ``claims.json`` holds."""
        return claims_json(self.results, self.budget.seeds, self.budget.episodes)


def select_claims(ids: Sequence[str] | None = None) -> list[Claim]:
    """The claims with these ids, in the registry's order (None: every claim).

    Raises:
        SpecError: naming the unknown ids and the known ones.
    """
    chosen = every_claim()
    if ids is None:
        return chosen
    known = {c.id for c in chosen}
    unknown = [i for i in ids if i not in known]
    if unknown:
        raise SpecError(f"unknown claim(s) {', '.join(unknown)}; known: {', '.join(known)}")
    return [c for c in chosen if c.id in ids]


def claims(
    only: Sequence[str] | None = None,
    budget: ClaimsBudget = DEFAULT_BUDGET,
    executor: ExecutorConfig = IN_PROCESS,
    *,
    out: str | os.PathLike[str] | None = None,
    root: str | os.PathLike[str] = ".",
    on_progress: Callable[[int], None] | None = None,
    on_start: Callable[[int], None] | None = None,
    resume: bool = False,
    on_note: Callable[[str], None] | None = None,
) -> ClaimsResult:
    """Run the claims' arms on the budget's seeds and give every claim its verdict.

    Args:
        only: The claim ids to check (default: every claim of the registry).
        budget: The seeds pooled and the episodes per seed (``QUICK``: a smoke test).
        executor: Where the episodes run (default: in this process).
        out: Where the arms' run directories go (``out/runs``); default a temporary
            directory, removed afterwards.
        root: The directory the claims' spec paths are relative to.
        on_progress: Called with the episodes each finished chunk adds.
        on_start: Called once, before any episode runs, with the episodes in all.
        resume: Finish the run a kill interrupted in ``out`` (``claim_outdir``).
        on_note: Called with each thing ``resume`` repaired or cut.

    Returns:
        Every claim's value, interval and verdict (``.table()``, ``.to_dict()``).

    Raises:
        SpecError: an unknown claim id, or a spec that does not load.
    """
    chosen = select_claims(only)
    with ExitStack() as stack:
        if out is None:  # the arms' run directories are read here, then removed
            out = stack.enter_context(tempfile.TemporaryDirectory(prefix="opar-claims-"))
        where = Path(out)
        with open_executor(executor) as pool:
            results = run_claims(
                where,
                root=Path(root),
                seeds=budget.seeds,
                episodes=budget.episodes,
                selected=chosen,
                executor=pool,
                parallelism=executor.parallelism,
                on_progress=on_progress,
                on_start=on_start,
                resume=resume,
                on_note=on_note,
            )
    return ClaimsResult(results, budget)
