"""Ablation of the cognitive PID: its terms switched off one by one, paired against the full law.

The variants (``VARIANTS``) keep the spec's PID (its gains, relay, band) and
set some gains to zero:

* ``PID`` — the full law (kp, ki, kd as given);
* ``PI`` — kd = 0 (no trend term);
* ``PD`` — ki = 0 (no accumulated error);
* ``P`` — ki = kd = 0;
* ``I`` — kp = kd = 0 (the accumulated error alone).

* ``PID, no pace`` — pace = 0 (the task error drives the relay), only when
  the PID under test has a pace error (``pace`` > 0).

Each runs with and without the stop confirmation built into the PID's
settling: the law's own ``settle_count`` and 1 (one reading; 2 when the law's
own is 1).  The reference is the full law with its own ``settle_count``.
Every arm runs on the same held-out episodes (common random numbers); each is
paired against the reference: success difference with the exact McNemar p
(Holm-adjusted over the arms), objective and token differences with paired
bootstrap 95 % intervals.

``ablation(spec, budget, executor)`` runs the whole protocol and returns an ``Ablation``:
its ``table()`` is the command's table, its ``to_dict()`` the command's ``ablation.json``.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from controllers.registry import CONTROLLERS
from opar_sim.measure.paired import paired_against, paired_columns
from opar_sim.measure.stats import Estimate, discordant, holm, mcnemar_exact
from opar_sim.measure.table import TextTable
from opar_sim.running.executors import ExecutorConfig, open_executor
from opar_sim.running.search import apply_params, executor_evaluate
from opar_sim.running.stages import Stage, no_stage
from opar_sim.spec.build import parse_spec
from opar_sim.spec.schema import ExperimentSpec, Objective
from opar_sim.studies.seeds import HOLDOUT_SEED

# name -> the gains set to zero
VARIANTS: dict[str, tuple[str, ...]] = {
    "PID": (),
    "PI": ("kd",),
    "PD": ("ki",),
    "P": ("ki", "kd"),
    "I": ("kp", "kd"),
    "PID, no pace": ("pace",),
}
PACED = ("PID, no pace",)  # variants that exist only when the law has a pace error


@dataclass(frozen=True)
class Arm:
    """One ablation arm: a variant and a settle count, as dotted-path changes of the spec."""

    variant: str
    settle_count: int
    changes: dict[str, float]

    @property
    def label(self) -> str:
        """E.g. ``PI, settle 1``."""
        return f"{self.variant}, settle {self.settle_count}"


@dataclass
class ArmResult:
    """One arm's held-out result and its paired differences against the full law."""

    arm: Arm
    gains: dict[str, float]
    n: int
    success: float
    success_ci95: tuple[float, float]
    mean_tokens: float
    objective: float
    success_diff: float  # arm − reference
    discordant: tuple[int, int]  # (only the arm, only the reference)
    p_mcnemar: float
    p_holm: float
    objective_diff: Estimate
    tokens_diff: Estimate


def settle_counts(own: int) -> tuple[int, int]:
    """The two settle counts of the ablation: the law's own first, then 1 (or 2 when own is 1)."""
    return (own, 1) if own != 1 else (1, 2)


def arms(settle_count: int = 2, pace: float = 0.0) -> list[Arm]:
    """Every variant × settle count, the reference (the full law as given) first.

    Args:
        settle_count: The PID's own settle count (the reference's).
        pace: The PID's pace; the no-pace variant is left out when it is 0.

    Returns:
        The arms, the reference ``PID, settle <settle_count>`` first.
    """
    out = []
    for variant, zeroed in VARIANTS.items():
        if variant in PACED and not pace:
            continue
        for count in settle_counts(settle_count):
            changes: dict[str, float] = {f"controller.params.{g}": 0.0 for g in zeroed}
            changes["controller.params.settle_count"] = count
            out.append(Arm(variant, count, changes))
    out.sort(key=lambda a: (a.variant, a.settle_count) != ("PID", settle_count))
    return out


def pid_data(data: Mapping[str, Any]) -> dict[str, Any]:
    """Spec data that runs the spec's PID alone (its ``[controller]`` or ``[[compare]]`` entry).

    Args:
        data: The spec's data (``spec.model_dump()``).

    Returns:
        A new data dict with ``controller = pid`` and its params; ``compare``,
        ``sweep`` and ``tune`` dropped.
    """
    params: dict[str, Any] = {}
    for entry in [data.get("controller") or {}, *(data.get("compare") or [])]:
        if entry.get("name") == "pid":
            params = dict(entry.get("params") or {})
            break
    out = {k: v for k, v in data.items() if k not in ("compare", "sweep", "tune")}
    out["controller"] = {"name": "pid", "params": params}
    return out


def gains_of(
    params: Mapping[str, Any], arm: Arm, defaults: Mapping[str, float]
) -> dict[str, float]:
    """The arm's kp, ki, kd: the spec's (or the law's defaults) with the arm's zeros."""
    gains = {g: float(params.get(g, defaults[g])) for g in ("kp", "ki", "kd")}
    for path, value in arm.changes.items():
        key = path.rsplit(".", 1)[-1]
        if key in gains:
            gains[key] = value
    return gains


def score_arms(
    results: Sequence[tuple[Arm, dict[str, float], list[dict[str, Any]]]],
    objective: Objective,
    seed: int = HOLDOUT_SEED,
) -> list[ArmResult]:
    """Pair every arm against the reference (the first) on the same episodes.

    Args:
        results: (arm, its gains, its episode rows), the reference first.
        objective: The per-episode objective.
        seed: The bootstrap generator's seed.

    Returns:
        One result per arm, in the order given; the reference's differences are zero.

    Raises:
        ValueError: when the arms were not run on the same episodes.
    """
    try:
        cols = paired_columns(
            [rows for _, _, rows in results], [arm.label for arm, _, _ in results], objective
        )
    except ValueError as exc:
        raise ValueError(f"the arms were not run on the same episodes: {exc}") from None
    counts = [discordant(w, cols.wins[0]) for w in cols.wins[1:]]
    raw = [mcnemar_exact(*c) for c in counts]
    adjusted = holm(raw)
    out = []
    for k, (arm, gains, _) in enumerate(results):
        out.append(
            ArmResult(
                arm=arm,
                gains=gains,
                p_mcnemar=1.0 if k == 0 else raw[k - 1],
                p_holm=1.0 if k == 0 else adjusted[k - 1],
                **paired_against(cols, k, 0, seed).as_fields(),
            )
        )
    return out


def ablation_json(
    results: Sequence[ArmResult], episodes: int, seed: int, objective: Objective
) -> dict[str, Any]:
    """ablation.json: the protocol and every arm against the full law."""
    return {
        "protocol": {
            "holdout_seed": seed,
            "episodes": episodes,
            "reference": results[0].arm.label if results else None,
            "variants": {k: list(v) for k, v in VARIANTS.items()},
            "settle_counts": sorted({r.arm.settle_count for r in results}),
            "objective": objective.model_dump(),
        },
        "arms": [
            {
                "arm": r.arm.label,
                "variant": r.arm.variant,
                "settle_count": r.arm.settle_count,
                "gains": r.gains,
                "success": r.success,
                "success_ci95": list(r.success_ci95),
                "mean_tokens": r.mean_tokens,
                "objective": r.objective,
                "success_diff": r.success_diff,
                "only_arm": r.discordant[0],
                "only_reference": r.discordant[1],
                "p_mcnemar": r.p_mcnemar,
                "p_holm": r.p_holm,
                "objective_diff": r.objective_diff.to_dict(),
                "tokens_diff": r.tokens_diff.to_dict(),
            }
            for r in results
        ],
    }


@dataclass(frozen=True)
class AblationBudget:
    """What the ablation may spend: held-out episodes per arm (every arm the same ones)."""

    episodes: int = 2000


@dataclass
class Ablation:
    """The ablation's result: every arm against the full law, on the same held-out episodes."""

    arms: list[ArmResult]
    episodes: int
    seed: int
    objective: Objective
    wall_seconds: float

    def to_dict(self) -> dict[str, Any]:
        """``ablation.json``: the protocol, every arm against the full law, the wall time."""
        return ablation_json(self.arms, self.episodes, self.seed, self.objective) | {
            "wall_seconds": self.wall_seconds
        }

    def table(self) -> TextTable:
        """Each arm's success and tokens, paired against the full law."""
        return ablation_table(self.arms, self.episodes, self.seed)


def _pid_defaults() -> dict[str, inspect.Parameter]:
    return dict(inspect.signature(CONTROLLERS.factories["pid"]).parameters)


def ablation_arms(spec: ExperimentSpec, source: str | None = None) -> list[Arm]:
    """The arms of ``spec``'s PID, each checked to be a valid spec before any episode runs.

    Args:
        spec: The spec; its PID (``[controller]`` or a ``[[compare]]`` entry) or the default.
        source: How an error names the spec (default: its name).

    Returns:
        The arms, the reference first.

    Raises:
        SpecError: naming the arm whose spec is not valid.
    """
    base = pid_data(spec.model_dump())
    signature = _pid_defaults()
    own = base["controller"]["params"]
    plan = arms(
        int(own.get("settle_count", signature["settle_count"].default)),
        float(own.get("pace", signature["pace"].default)),
    )
    for arm in plan:
        parse_spec(
            apply_params(base, arm.changes), f"{source or spec.name}: ablation arm {arm.label}"
        )
    return plan


def ablation(
    spec: ExperimentSpec,
    budget: AblationBudget = AblationBudget(),
    executor: ExecutorConfig | None = None,
    *,
    seed: int = HOLDOUT_SEED,
    plan: Sequence[Arm] | None = None,
    source: str | None = None,
    stage: Stage = no_stage,
) -> Ablation:
    """Run every arm on the same held-out episodes and pair each against the full law.

    Args:
        spec: The spec whose PID is ablated (its objective scores the episodes).
        budget: Held-out episodes per arm.
        executor: Where the episodes run (None: serially, in this process).
        seed: The held-out seed (also the bootstrap's).
        plan: The arms, the reference first (default: ``ablation_arms(spec)``).
        source: How an error names the spec (default: its name).
        stage: Shows the progress, one unit per arm (default: nothing).

    Returns:
        The arms' results, the reference first.
    """
    started = time.perf_counter()
    plan = list(plan) if plan is not None else ablation_arms(spec, source)
    objective = spec.tune.objective if spec.tune is not None else Objective()
    base = pid_data(spec.model_dump())
    signature = _pid_defaults()
    defaults = {g: float(signature[g].default) for g in ("kp", "ki", "kd")}
    config = executor or ExecutorConfig("serial", 1)
    results = []
    with open_executor(config) as pool, stage("arms", len(plan)) as advance:
        evaluate = executor_evaluate(base, pool, config.parallelism, parse_spec)
        for arm in plan:
            rows = evaluate(arm.changes, budget.episodes, seed)
            results.append((arm, gains_of(base["controller"]["params"], arm, defaults), rows))
            advance(1)
    scored = score_arms(results, objective, seed)
    return Ablation(scored, budget.episodes, seed, objective, time.perf_counter() - started)


def ablation_table(results: Sequence[ArmResult], episodes: int, seed: int) -> TextTable:
    """Each arm's success and tokens, paired against the full law."""
    columns = [
        "arm",
        "kp",
        "ki",
        "kd",
        "success (95% CI)",
        "Δ success pts",
        "b/c",
        "McNemar p",
        "Holm p",
        "tokens",
        "Δ tokens (95% CI)",
    ]
    rows = []
    for k, r in enumerate(results):
        lo, hi = r.success_ci95
        ref = k == 0
        d = r.tokens_diff
        rows.append(
            [
                r.arm.label + (" (reference)" if ref else ""),
                f"{r.gains['kp']:g}",
                f"{r.gains['ki']:g}",
                f"{r.gains['kd']:g}",
                f"{r.success:.1%} [{lo:.1%}, {hi:.1%}]",
                "" if ref else f"{100 * r.success_diff:+.1f}",
                "" if ref else f"{r.discordant[0]}/{r.discordant[1]}",
                "" if ref else f"{r.p_mcnemar:.3g}",
                "" if ref else f"{r.p_holm:.3g}",
                f"{r.mean_tokens:.0f}",
                "" if ref else f"{d.mean:+.0f} [{d.low:+.0f}, {d.high:+.0f}]",
            ]
        )
    notes = [
        f"{episodes} held-out episodes (seed {seed}), the same for every arm; Δ = arm − reference",
        "b/c = episodes only the arm / only the reference solved; exact McNemar p, "
        "Holm-adjusted over the arms; token interval: paired bootstrap 95 %",
        "settle = consecutive readings inside the settle band before TERMINATE "
        "(1: no confirmation)",
    ]
    # on a narrow terminal the gains go first (the arm's label names what it removes)
    priority = (0, 2, 2, 2, 0, 0, 3, 1, 0, 2, 1)
    return TextTable("PID ablation", columns, rows, notes, left=1, bold=False, priority=priority)
