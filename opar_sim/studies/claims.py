"""Claims as code: every number the docs state (docs/results.md), regenerated on evaluation seeds.

A ``Claim`` is the docs' sentence, the shipped specs (and overrides) its
arms run, and a function that computes the claimed value with its 95 %
interval from the arms' episodes: a Wilson interval for a rate, a paired
bootstrap (``paired_interval``) for a difference of means, and for a
difference of success rates also the exact McNemar test.  The verdict is
``supported`` when the interval lies on the claimed side of the null value
(and McNemar's p, where there is one, is below 0.05), ``not significant``
otherwise.

Evaluation seeds: spec seeds ``EVAL_SEEDS`` = 0..3, 300 episodes each, pooled
(a pair is the same episode index under the same spec seed, so every arm saw
the same worlds).  Tuning never uses them: ``opar_sim.studies.shootout``
trains on spec seed ``TUNING_SEED`` and scores held-out episodes on ``HOLDOUT_SEED``, and
``[tune]`` specs use their own training and held-out seeds (100..199).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from opar_sim.measure.stats import (
    discordant,
    mcnemar_exact,
    paired_interval,
    success_rate,
)
from opar_sim.rundir import iter_episodes, iter_steps, write_json
from opar_sim.running.runner import run_many
from opar_sim.spec.build import load_spec
from opar_sim.spec.edit import apply_changes
from opar_sim.spec.schema import ExperimentSpec
from opar_sim.studies.seeds import EVAL_SEEDS

EPISODES = 300
QUICK_EPISODES = 40
ALPHA = 0.05
BOOTSTRAP_SEED = 20_261_201
SUPPORTED = "supported"
NOT_SIGNIFICANT = "not significant"
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
    """A claimed value with its 95 % interval and, for paired successes, McNemar's p."""

    value: float
    low: float
    high: float
    n: int
    p: float | None = None


@dataclass(frozen=True)
class Claim:
    """A README sentence and how to check it.

    ``null`` and ``direction`` state what the claim asserts: the value is above
    ``null`` (direction +1) or below it (direction -1).
    """

    id: str
    sentence: str
    arms: Mapping[str, Arm]
    measure: Callable[[Mapping[str, ArmData]], Value]
    null: float = 0.0
    direction: int = 1
    unit: str = "pts"  # "pts": percentage points (×100), "%": a rate (×100), "": as is


@dataclass(frozen=True)
class ClaimResult:
    """A checked claim: its value, interval and verdict."""

    claim: Claim
    value: Value
    verdict: str

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
            "p": self.value.p,
            "verdict": self.verdict,
        }


def verdict(value: Value, null: float, direction: int, alpha: float = ALPHA) -> str:
    """``supported`` when the interval (and McNemar's p) backs the claimed direction.

    Args:
        value: The measured value with its interval.
        null: The value the claim must beat.
        direction: +1: the claim is value > null; -1: value < null.
        alpha: The significance level of McNemar's test.

    Returns:
        ``supported`` or ``not significant``.
    """
    if math.isnan(value.low) or math.isnan(value.high):
        return NOT_SIGNIFICANT
    side = value.low > null if direction > 0 else value.high < null
    if value.p is not None and not value.p < alpha:
        return NOT_SIGNIFICANT
    return SUPPORTED if side else NOT_SIGNIFICANT


# --- measures -----------------------------------------------------------------------------


def _rng() -> np.random.Generator:
    return np.random.default_rng(BOOTSTRAP_SEED)


def _paired(a: Mapping[Key, float], b: Mapping[Key, float], *, successes: bool = False) -> Value:
    keys = sorted(set(a) & set(b))
    xa, xb = [a[k] for k in keys], [b[k] for k in keys]
    est = paired_interval(xa, xb, _rng())
    p = None
    if successes:
        only_a, only_b = discordant([bool(x) for x in xa], [bool(x) for x in xb])
        p = mcnemar_exact(only_a, only_b)
    return Value(est.mean, est.low, est.high, est.n, p)


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
        return Value(p.rate, p.low, p.high, p.n)

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
        return Value(p.rate, p.low, p.high, p.n)

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


# --- the claims ---------------------------------------------------------------------------

FB = "experiments/flight_booking_controllers.toml"
CMP = "experiments/compare_flight_booking.toml"
ONLY_THRESHOLD = {"compare": [{"name": "threshold"}]}
CONFIRM2 = ONLY_THRESHOLD | {"guards.confirm": 2}


def _c(spec: str, controller: str | None = None, **overrides: Any) -> Arm:
    return Arm(spec, overrides, controller)


def claims() -> list[Claim]:
    """Every quantitative statement of the README, as a claim."""
    fb = {n: _c(FB, n) for n in ("oracle", "pid", "threshold", "fixed_interval", "confidence")}
    fb["open_loop"] = _c(FB, "open_loop")
    fb["stall_counter"] = _c(FB, "stall_counter")
    thr2 = Arm(FB, CONFIRM2, "threshold")
    cmp = {n: _c(CMP, n) for n in ("pid", "threshold", "confidence", "fixed_interval")}
    cmp_thr2 = Arm(CMP, CONFIRM2, "threshold")
    fb_pid = Arm("experiments/flight_booking.toml")
    relay = Arm(
        "experiments/flight_booking.toml",
        # the undamped relay at a demonstration setting (its fitted default, threshold
        # 0.95, hardly ever replans): REPLAN whenever e > 0.5
        {"controller": {"name": "bang_bang", "params": {"threshold": 0.5, "complete": 0.9}}},
        "bang_bang",
    )
    inf = "experiments/flight_booking_infeasible.toml"
    rqa = "experiments/research_qa_faults.toml"
    reb = "experiments/context_rebound.toml"
    rfx = "experiments/reflexion.toml"
    return [
        Claim(
            "pid_success",
            "The cognitive PID completes most flight bookings (flight_booking.toml).",
            {"pid": fb_pid},
            rate("pid"),
            null=0.5,
            unit="%",
        ),
        Claim(
            "team_success",
            "A team (PID orchestrator, threshold sub-agents for weather and flight booking, "
            "nested OPAR) completes most of its tasks (team.toml).",
            {"team": Arm("experiments/team.toml")},
            rate("team"),
            null=0.5,
            unit="%",
        ),
        Claim(
            "oracle_beats_pid",
            "The oracle succeeds more often than the PID (the PID's regret, success).",
            {"oracle": fb["oracle"], "pid": fb["pid"]},
            difference("oracle", "pid"),
        ),
        Claim(
            "oracle_cheaper_than_pid",
            "The oracle spends fewer tokens per episode than the PID (regret, tokens).",
            {"oracle": fb["oracle"], "pid": fb["pid"]},
            difference("oracle", "pid", "tokens"),
            direction=-1,
            unit="",
        ),
        Claim(
            "pid_beats_threshold",
            "The PID succeeds more often than Algorithm 2's thresholds (no confirmation).",
            {"pid": fb["pid"], "threshold": fb["threshold"]},
            difference("pid", "threshold"),
        ),
        Claim(
            "pid_beats_threshold_confirm2",
            "The PID succeeds more often than thresholds with the same two-reading "
            "confirmation (guards.confirm = 2).",
            {"pid": fb["pid"], "threshold+confirm2": thr2},
            difference("pid", "threshold+confirm2"),
        ),
        Claim(
            "replan_beats_no_replan",
            "Thresholds with REPLAN beat the same thresholds with REPLAN switched off.",
            {
                "threshold": fb["threshold"],
                "no_replan": Arm("experiments/flight_booking_no_replan.toml"),
            },
            difference("threshold", "no_replan"),
        ),
        Claim(
            "closed_loop_beats_open_loop",
            "Even the weakest closed-loop law (confidence) beats open_loop.",
            {"confidence": fb["confidence"], "open_loop": fb["open_loop"]},
            difference("confidence", "open_loop"),
        ),
        Claim(
            "pid_beats_stall_counter",
            "The PID succeeds more often than Magentic-One's stall counter.",
            {"pid": fb["pid"], "stall_counter": fb["stall_counter"]},
            difference("pid", "stall_counter"),
        ),
        Claim(
            "bang_bang_chatters",
            "bang_bang, a Reflect with no damping (a pure relay on the error), replans "
            "more per episode than the PID (flight_booking.toml, REPLANs).",
            {"bang_bang": relay, "pid": fb_pid},
            difference("bang_bang", "pid", "replans"),
            unit="",
        ),
        Claim(
            "bang_bang_costs_success",
            "The undamped relay succeeds less often than the PID (flight_booking.toml).",
            {"bang_bang": relay, "pid": fb_pid},
            difference("bang_bang", "pid"),
            direction=-1,
        ),
        Claim(
            "fixed_interval_chatters",
            "fixed_interval with interval 1 replans more per episode than confidence, "
            "the next most replanning law (compare_flight_booking, REPLANs).",
            {"fixed_interval": cmp["fixed_interval"], "confidence": cmp["confidence"]},
            difference("fixed_interval", "confidence", "replans"),
            unit="",
        ),
        Claim(
            "fixed_interval_chatter_costs",
            "Replanning every step costs success against the default interval (4).",
            {"interval1": _c(CMP, "fixed_interval"), "interval3": fb["fixed_interval"]},
            difference("interval1", "interval3"),
            direction=-1,
        ),
        Claim(
            "overconfidence_premature",
            "The over-confident agent (bias 0.2) makes `confidence` stop prematurely "
            "more often than the default agent (bias 0.05).",
            {"bias0.2": cmp["confidence"], "bias0.05": fb["confidence"]},
            outcome_difference("bias0.2", "bias0.05", "premature"),
        ),
        Claim(
            "overconfident_threshold_confirm2_beats_pid",
            "With the over-confident agent, thresholds with confirm = 2 beat the PID "
            "(at the fitted defaults).",
            {"pid": cmp["pid"], "threshold+confirm2": cmp_thr2},
            difference("threshold+confirm2", "pid"),
        ),
        Claim(
            "overconfident_pid_beats_threshold",
            "With the over-confident agent the PID beats thresholds without confirmation.",
            {"pid": cmp["pid"], "threshold": cmp["threshold"]},
            difference("pid", "threshold"),
        ),
        Claim(
            "hysteresis_cuts_replans",
            "hysteresis = 0.2 cuts the PID's REPLANs per episode.",
            {
                "hysteresis": Arm(
                    "experiments/flight_booking.toml", {"controller.params.hysteresis": 0.2}
                ),
                "pid": fb_pid,
            },
            difference("hysteresis", "pid", "replans"),
            direction=-1,
            unit="",
        ),
        Claim(
            "hysteresis_success",
            "hysteresis = 0.2 raises the PID's success.",
            {
                "hysteresis": Arm(
                    "experiments/flight_booking.toml", {"controller.params.hysteresis": 0.2}
                ),
                "pid": fb_pid,
            },
            difference("hysteresis", "pid"),
        ),
        Claim(
            "guards_cut_replans",
            "The repeat, token-spike and human guards cut the PID's REPLANs.",
            {"guarded": Arm("experiments/flight_booking_guarded.toml"), "pid": fb_pid},
            difference("guarded", "pid", "replans"),
            direction=-1,
            unit="",
        ),
        Claim(
            "guards_cut_tokens",
            "The guards cut the PID's tokens per episode.",
            {"guarded": Arm("experiments/flight_booking_guarded.toml"), "pid": fb_pid},
            difference("guarded", "pid", "tokens"),
            direction=-1,
            unit="",
        ),
        Claim(
            "guards_cost_time",
            "The guards (30 s human reviews) raise the simulated seconds per episode.",
            {"guarded": Arm("experiments/flight_booking_guarded.toml"), "pid": fb_pid},
            difference("guarded", "pid", "sim_seconds"),
            unit="",
        ),
        Claim(
            "guards_success",
            "The guards raise the PID's success.",
            {"guarded": Arm("experiments/flight_booking_guarded.toml"), "pid": fb_pid},
            difference("guarded", "pid"),
        ),
        Claim(
            "pid_gives_up_on_infeasible",
            "The PID's give-up rule gives up on most infeasible bookings (gave_up share).",
            {"pid": Arm(inf, {}, "pid")},
            infeasible_rate("pid", "gave_up"),
            null=0.5,
            unit="%",
        ),
        Claim(
            "oracle_gives_up_on_infeasible",
            "The oracle gives up on (nearly) every infeasible booking (gave_up share > 90 %).",
            {"oracle": Arm(inf, {}, "oracle")},
            infeasible_rate("oracle", "gave_up"),
            null=0.9,
            unit="%",
        ),
        Claim(
            "give_up_saves_tokens",
            "On 30 % infeasible worlds the give-up rule saves tokens against the PID without it.",
            {
                "rule": Arm(inf, {}, "pid"),
                "no_rule": Arm(inf, {"compare": [{"name": "pid"}]}, "pid"),
            },
            difference("rule", "no_rule", "tokens"),
            direction=-1,
            unit="",
        ),
        Claim(
            "give_up_cost_abandoned",
            "The give-up rule abandons feasible bookings more often than the PID without it.",
            {
                "rule": Arm(inf, {}, "pid"),
                "no_rule": Arm(inf, {"compare": [{"name": "pid"}]}, "pid"),
            },
            outcome_difference("rule", "no_rule", "abandoned"),
        ),
        Claim(
            "context_rebound",
            "Without compression the wrong-action share rebounds: rounds 13–20 minus "
            "rounds 5–8, within episode (context_rebound.toml).",
            {"plain": Arm(reb, {"agent.params.context_max": None}, steps=True)},
            rebound("plain"),
        ),
        Claim(
            "compression_success",
            "Context compression (C_max = 2000) raises success on research_qa (K = 6).",
            {"compressed": Arm(reb), "plain": Arm(reb, {"agent.params.context_max": None})},
            difference("compressed", "plain"),
        ),
        Claim(
            "compression_tokens",
            "Context compression cuts tokens per episode.",
            {"compressed": Arm(reb), "plain": Arm(reb, {"agent.params.context_max": None})},
            difference("compressed", "plain", "tokens"),
            direction=-1,
            unit="",
        ),
        Claim(
            "reflexion_by_attempt_3",
            "Reflexion's memory solves more tasks by attempt 3 than plain retries.",
            {"memory": Arm(rfx), "retries": Arm(rfx, {"reflexion.keep": 0})},
            learning_difference("memory", "retries", 3),
        ),
        Claim(
            "reflexion_by_attempt_5",
            "Reflexion's memory solves more tasks by attempt 5 than plain retries.",
            {"memory": Arm(rfx), "retries": Arm(rfx, {"reflexion.keep": 0})},
            learning_difference("memory", "retries", 5),
        ),
        Claim(
            "faults_do_not_cost_success",
            "At the fitted defaults (fitted on the faulted variant) research_qa succeeds more "
            "often with its delay, latency and disturbance wrappers than without them.",
            {"faults": Arm(rqa), "plain": Arm(rqa, {"task.wrappers": []})},
            difference("faults", "plain"),
        ),
        Claim(
            "guardrail_success",
            "A guardrail on high-risk calls raises success (guardrails.toml against no guardrail).",
            {
                "guardrail": Arm("experiments/guardrails.toml"),
                "none": Arm("experiments/guardrails.toml", {"guardrail": None}),
            },
            difference("guardrail", "none"),
        ),
    ]


# --- running ------------------------------------------------------------------------------


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


def run_claims(
    out: Path,
    *,
    root: Path = Path("."),
    seeds: Sequence[int] = EVAL_SEEDS,
    episodes: int = EPISODES,
    selected: Sequence[Claim] | None = None,
    executor: Any = None,
    parallelism: int = 1,
    on_progress: Callable[[int], None] | None = None,
    on_start: Callable[[int], None] | None = None,
) -> list[ClaimResult]:
    """Run every arm the claims need (each distinct spec once per seed) and check the claims.

    Args:
        out: Where the run directories go (``out/runs/<n>-seed<s>``).
        root: The directory the claims' spec paths are relative to.
        seeds: The spec seeds, pooled.
        episodes: Episodes per seed.
        selected: The claims to check (default: all).
        executor: Where the chunks run (None: serially).
        parallelism: The executor's workers.
        on_progress: Called with the episodes each finished chunk adds.
        on_start: Called once, before any episode runs, with the episodes in all.

    Returns:
        One result per claim, in order.
    """
    chosen = list(selected) if selected is not None else claims()
    keys: dict[tuple[str, str, bool], int] = {}
    runs: list[tuple[ExperimentSpec, Path]] = []
    where: dict[tuple[tuple[str, str, bool], int], Path] = {}
    for claim in chosen:
        for arm in claim.arms.values():
            if arm.run_key in keys:
                continue
            n = keys[arm.run_key] = len(keys)
            for seed, spec in zip(seeds, arm_specs(arm, root, seeds, episodes), strict=True):
                path = out / "runs" / f"{n:02d}-{Path(arm.spec).stem}-seed{seed}"
                runs.append((spec, path))
                where[(arm.run_key, seed)] = path
    if on_start is not None:
        on_start(sum(spec.episodes * len(spec.controller_list()) for spec, _ in runs))
    run_many(runs, executor=executor, parallelism=parallelism, on_progress=on_progress)
    cache: dict[tuple[tuple[str, str, bool], str | None], ArmData] = defaultdict(
        lambda: ArmData({})
    )
    results = []
    for claim in chosen:
        data: dict[str, ArmData] = {}
        for name, arm in claim.arms.items():
            ck = (arm.run_key, arm.controller)
            if ck not in cache:
                for seed in seeds:
                    load_arm(where[(arm.run_key, seed)], seed, cache[ck], arm.controller, arm.steps)
            data[name] = cache[ck]
        value = claim.measure(data)
        results.append(ClaimResult(claim, value, verdict(value, claim.null, claim.direction)))
    return results


def total_episodes(seeds: Sequence[int], episodes: int) -> int:
    """How many episodes the default claims run (every controller of every distinct arm)."""
    seen: set[tuple[str, str, bool]] = set()
    total = 0
    for claim in claims():
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


def claims_json(
    results: Sequence[ClaimResult], seeds: Sequence[int], episodes: int
) -> dict[str, Any]:
    """What claims.json holds."""
    return {
        "seeds": list(seeds),
        "episodes_per_seed": episodes,
        "alpha": ALPHA,
        "claims": [r.as_dict() for r in results],
    }


def write_claims(path: Path, results: Sequence[ClaimResult], seeds: Sequence[int], n: int) -> None:
    """Write claims.json."""
    write_json(path, claims_json(results, seeds, n))
