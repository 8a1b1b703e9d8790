"""Claims as code: the machinery exact on constructed data, each claim on fresh seeds."""

from __future__ import annotations

import json
import math

import pytest
from scipy import stats as sps

from opar_sim.running.executors import ExecutorConfig, open_executor
from opar_sim.studies.claim_measures import (
    ArmData,
    Value,
    difference,
    infeasible_rate,
    learning_difference,
    rate,
)
from opar_sim.studies.claim_registry import every_claim
from opar_sim.studies.claims import (
    NOT_SIGNIFICANT,
    SUPPORTED,
    format_value,
    run_claims,
    verdict,
    write_claims,
)
from opar_sim.studies.seeds import EVAL_SEEDS, HOLDOUT_SEED
from opar_sim.studies.seeds import TUNING_SEED as TRAIN_SEED
from tests.conftest import EXPERIMENTS

ROOT = EXPERIMENTS.parent


def _rows(successes, **extra):
    return {
        (0, i): [{"success": s, "outcome": "success" if s else "premature", **extra}]
        for i, s in enumerate(successes)
    }


def test_verdict_follows_the_interval_and_mcnemar():
    assert verdict(Value(0.1, 0.01, 0.2, 10), 0.0, +1) == SUPPORTED
    assert verdict(Value(0.1, -0.01, 0.2, 10), 0.0, +1) == NOT_SIGNIFICANT
    assert verdict(Value(-0.1, -0.2, -0.01, 10), 0.0, -1) == SUPPORTED
    assert verdict(Value(-0.1, -0.2, -0.01, 10), 0.0, +1) == NOT_SIGNIFICANT
    assert verdict(Value(0.1, 0.01, 0.2, 10, p=0.049), 0.0, +1) == SUPPORTED
    assert verdict(Value(0.1, 0.01, 0.2, 10, p=0.05), 0.0, +1) == NOT_SIGNIFICANT
    assert verdict(Value(0.8, 0.51, 0.9, 10), 0.5, +1) == SUPPORTED
    assert verdict(Value(0.8, 0.5, 0.9, 10), 0.5, +1) == NOT_SIGNIFICANT  # strict
    assert verdict(Value(math.nan, math.nan, math.nan, 0), 0.0, +1) == NOT_SIGNIFICANT


def test_a_rate_is_a_wilson_interval():
    data = {"a": ArmData(_rows([True] * 17 + [False] * 3))}
    v = rate("a")(data)
    ci = sps.binomtest(17, 20).proportion_ci(confidence_level=0.95, method="wilson")
    assert (v.value, v.n) == (0.85, 20)
    assert v.low == pytest.approx(ci.low, abs=1e-6) and v.high == pytest.approx(ci.high, abs=1e-6)


def test_a_success_difference_is_paired_with_exact_mcnemar():
    a = [True] * 12 + [False] * 2 + [True] * 6
    b = [True] * 12 + [True] * 2 + [False] * 6  # discordant: a only = 6, b only = 2
    v = difference("a", "b")({"a": ArmData(_rows(a)), "b": ArmData(_rows(b))})
    assert v.value == pytest.approx((6 - 2) / 20)
    assert v.p == pytest.approx(sps.binomtest(2, 8, 0.5).pvalue)
    assert v.low <= v.value <= v.high and v.n == 20
    # only worlds both arms ran are paired
    one = {"a": ArmData(_rows([True, False])), "b": ArmData(_rows([False]))}
    assert difference("a", "b")(one).n == 1


def test_a_field_difference_has_no_mcnemar_and_constant_differences_a_zero_width_interval():
    a = {(0, i): [{"tokens": 10.0 + i}] for i in range(5)}
    b = {(0, i): [{"tokens": 7.0 + i}] for i in range(5)}
    v = difference("a", "b", "tokens")({"a": ArmData(a), "b": ArmData(b)})
    assert (v.value, v.low, v.high, v.p) == (3.0, 3.0, 3.0, None)


def test_infeasible_rate_counts_only_infeasible_worlds():
    rows = {
        (0, 0): [{"feasible": False, "outcome": "gave_up"}],
        (0, 1): [{"feasible": False, "outcome": "truncated:max_steps"}],
        (0, 2): [{"feasible": True, "outcome": "gave_up"}],  # not counted: feasible
        (1, 0): [{"feasible": False, "outcome": "gave_up"}],
    }
    v = infeasible_rate("a", "gave_up")({"a": ArmData(rows)})
    assert (v.value, v.n) == (2 / 3, 3)


def test_learning_counts_a_world_solved_by_an_attempt():
    solved_2 = [{"success": False, "attempt": 1}, {"success": True, "attempt": 2}]
    never = [{"success": False, "attempt": a} for a in (1, 2, 3)]
    a = {(0, 0): solved_2, (0, 1): solved_2}
    b = {(0, 0): never, (0, 1): solved_2}
    assert learning_difference("a", "b", 1)({"a": ArmData(a), "b": ArmData(b)}).value == 0.0
    v = learning_difference("a", "b", 2)({"a": ArmData(a), "b": ArmData(b)})
    assert v.value == 0.5 and v.p == 1.0  # one discordant world: McNemar cannot reject


def test_format_points_percent_and_plain():
    c = {x.id: x for x in every_claim()}
    from opar_sim.studies.claims import ClaimResult

    r = ClaimResult(c["oracle_beats_pid"], Value(0.129, 0.108, 0.152, 1200), SUPPORTED)
    assert format_value(r) == ("+12.9 pts", "+10.8 to +15.2")
    r = ClaimResult(c["pid_success"], Value(0.819, 0.796, 0.84, 1200), SUPPORTED)
    assert format_value(r) == ("81.9 %", "79.6 to 84.0")
    r = ClaimResult(c["oracle_cheaper_than_pid"], Value(-30799.4, -34257, -27542, 1), SUPPORTED)
    assert format_value(r) == ("-30,799", "-34,257 to -27,542")


def test_the_evaluation_seeds_are_not_tuning_seeds():
    assert not set(EVAL_SEEDS) & ({TRAIN_SEED, HOLDOUT_SEED} | set(range(100, 200)))


def test_claim_ids_are_unique_and_every_arm_names_a_shipped_spec():
    ids = [c.id for c in every_claim()]
    assert len(ids) == len(set(ids))
    for c in every_claim():
        for arm in c.arms.values():
            assert (ROOT / arm.spec).is_file(), (c.id, arm.spec)


def test_a_quick_run_writes_claims_json(tmp_path):
    chosen = [c for c in every_claim() if c.id in ("pid_beats_threshold_confirm2", "pid_success")]
    results = run_claims(tmp_path, root=ROOT, seeds=(5,), episodes=12, selected=chosen)
    write_claims(tmp_path / "claims.json", results, (5,), 12)
    data = json.loads((tmp_path / "claims.json").read_text())
    assert [c["id"] for c in data["claims"]] == [c.id for c in chosen]
    assert data["seeds"] == [5] and data["episodes_per_seed"] == 12
    by_id = {c["id"]: c for c in data["claims"]}
    assert by_id["pid_success"]["n"] == 12  # the PID's success rate over 12 episodes
    assert (
        by_id["pid_beats_threshold_confirm2"]["arms"]["threshold+confirm2"]["overrides"][
            "guards.confirm"
        ]
        == 2
    )
    for row in data["claims"]:
        assert row["verdict"] in (SUPPORTED, NOT_SIGNIFICANT)
        assert row["ci95"][0] <= row["value"] <= row["ci95"][1]


# --- each claim's direction on fresh seeds (never the README's 0..3, never tuning's) -------

from opar_sim.studies.seeds import FRESH_SEEDS  # noqa: E402

FRESH_EPISODES = 300
# The README reports these as ties under the fair protocol; on fresh seeds they stay ties.
TIES = {
    "hysteresis_success",
    "guards_success",
    "guardrail_success",
}
# Small effects (on the 1200 evaluation episodes: +3.2 to +4.8 pts, -3,082 tokens, intervals
# starting near 0): at 600 fresh episodes the interval is too wide to exclude 0, so only the
# point estimate's sign is asserted here; the 1200 evaluation episodes carry the verdict.
WEAK = {
    "pid_beats_threshold",
    "pid_beats_stall_counter",
    "overconfident_pid_beats_threshold",
    "guards_cut_tokens",
    "faults_do_not_cost_success",
}


@pytest.fixture(scope="module")
def fresh(tmp_path_factory):
    out = tmp_path_factory.mktemp("claims-fresh")
    config = ExecutorConfig("process", 2)
    with open_executor(config) as executor:
        results = run_claims(
            out,
            root=ROOT,
            seeds=FRESH_SEEDS,
            episodes=FRESH_EPISODES,
            executor=executor,
            parallelism=config.parallelism,
        )
    return {r.claim.id: r for r in results}


@pytest.mark.parametrize("claim", [c.id for c in every_claim()])
def test_each_claim_holds_on_fresh_seeds(fresh, claim):
    r = fresh[claim]
    if claim in WEAK:
        assert r.value.value * r.claim.direction > r.claim.null, (r.value, r.claim.sentence)
    elif claim in TIES:
        assert r.verdict == NOT_SIGNIFICANT, (r.value, r.claim.sentence)
    else:
        assert r.verdict == SUPPORTED, (r.value, r.claim.sentence)
