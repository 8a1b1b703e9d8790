"""``tune`` as an estimate: replicates on the ledger's seeds, a race, the incumbent as an arm.

Through ``opar_sim.api`` with tiny budgets, and the race and Student's t on constructed data.
"""

from __future__ import annotations

import math
import tomllib

import pytest

from opar_sim import api
from opar_sim.measure.replicates import replicate_diff, spread, t_quantile, t_within
from opar_sim.spec.build import load_spec
from opar_sim.spec.edit import changed
from opar_sim.spec.schema import ExperimentSpec, Objective
from opar_sim.studies.race import Arm, distinct_arms, race_cost, round_sizes, successive_halving
from opar_sim.studies.seeds import (
    CONFIRM_SEED,
    RELEASE_HOLDOUT_SEED,
    TUNING_SEEDS,
    replicate_seeds,
)
from tests.conftest import EXPERIMENTS

# -- Student's t, exactly ---------------------------------------------------------------


def test_t_quantiles_match_the_tables():
    # two-sided 95 % critical values of Student's t (any statistics table)
    for df, value in ((1, 12.706205), (2, 4.302653), (4, 2.776445), (9, 2.262157), (30, 2.042272)):
        assert t_quantile(0.95, df) == pytest.approx(value, abs=1e-6)
    assert t_within(0.0, 3) == 0.0 and t_within(math.inf, 3) == 1.0


def test_t_matches_scipy_where_it_is_installed():
    stats = pytest.importorskip("scipy.stats")
    for df in range(1, 13):
        for t in (0.1, 0.7, 1.5, 2.3905, 4.0, 11.0):
            assert t_within(t, df) == pytest.approx(1 - 2 * stats.t.sf(t, df), abs=1e-12)
        assert t_quantile(0.95, df) == pytest.approx(stats.t.ppf(0.975, df), abs=1e-9)


def test_a_replicate_level_comparison_computed_by_hand():
    a = [0.80, 0.82, 0.79, 0.81, 0.83]
    b = [0.78, 0.80, 0.80, 0.78, 0.79]
    got = replicate_diff(a, b)
    # differences 0.02, 0.02, -0.01, 0.03, 0.04: mean 0.02, sd sqrt(0.0014 / 4)
    assert got.diffs == pytest.approx([0.02, 0.02, -0.01, 0.03, 0.04], abs=1e-15)
    assert got.mean == pytest.approx(0.02, abs=1e-15)
    assert got.sd == pytest.approx(math.sqrt(0.00035), abs=1e-15)
    half = 2.7764451051977987 * math.sqrt(0.00035) / math.sqrt(5)  # t(0.975, 4) · se
    assert (got.low, got.high) == pytest.approx((0.02 - half, 0.02 + half), abs=1e-9)
    # t = 0.02 / se = 2.390457; two-sided p with 4 degrees of freedom
    t = 0.02 / (math.sqrt(0.00035) / math.sqrt(5))
    theta = math.atan(t / 2)
    assert got.p == pytest.approx(1 - math.sin(theta) * (1 + math.cos(theta) ** 2 / 2), abs=1e-12)
    assert got.p == pytest.approx(0.0751304546, abs=1e-9) and got.df == 4  # scipy ttest_rel


def test_degenerate_replicate_comparisons():
    one = replicate_diff([0.8], [0.7])
    assert one.p == 1.0 and one.low == -math.inf and one.high == math.inf
    same = replicate_diff([0.75, 0.5], [0.625, 0.375])  # a constant difference, no spread
    assert same.mean == 0.125 and same.p == 0.0 and same.low == same.high == 0.125
    assert replicate_diff([0.5, 0.5], [0.5, 0.5]).p == 1.0
    s = spread([0.1, 0.3, 0.2])
    assert (s.mean, s.low, s.high) == pytest.approx((0.2, 0.1, 0.3)) and s.sd == pytest.approx(0.1)
    with pytest.raises(ValueError):
        replicate_diff([0.1], [0.1, 0.2])


# -- the seed ledger -------------------------------------------------------------------------


def test_replicate_seeds_come_from_the_ledger_and_offsets_are_disjoint():
    assert replicate_seeds(5) == [(TUNING_SEEDS[r], r) for r in range(5)]
    runs = [replicate_seeds(5, offset) for offset in (0, 1, 2)]
    training = [{seed for seed, _ in run} for run in runs]
    assert not (training[0] & training[1]) and not (training[1] & training[2])
    assert runs[2][0] == (TUNING_SEEDS[10], 10)
    with pytest.raises(ValueError, match="the ledger has"):
        replicate_seeds(5, len(TUNING_SEEDS) // 5)


# -- the race ---------------------------------------------------------------------------------


def _rows(rate: float, start: int, stop: int) -> list[dict]:
    # episode i succeeds when its fractional position is below the arm's rate
    return [
        {"episode": i, "success": (i * 0.618) % 1 < rate, "steps": 5, "tokens": 10, "replans": 0}
        for i in range(start, stop)
    ]


def test_successive_halving_keeps_the_incumbent_and_runs_each_episode_once():
    rates = {None: 0.6, 1.0: 0.3, 2.0: 0.8, 3.0: 0.5, 4.0: 0.7, 5.0: 0.2}
    calls: list[tuple[float | None, int, int]] = []

    def evaluate(params, episodes, seed, start=0):
        assert seed == CONFIRM_SEED
        key = None if params is None else params["x"]
        calls.append((key, start, start + episodes))
        return _rows(rates[key], start, start + episodes)

    arms = distinct_arms([{"x": v} for v in (1.0, 2.0, 3.0, 4.0, 5.0, 2.0)])
    assert [a.label for a in arms] == ["incumbent", "r0", "r1+r5", "r2", "r3", "r4"]
    race = successive_halving(arms, evaluate, Objective(), CONFIRM_SEED, 400)
    assert [r.episodes for r in race.rounds] == round_sizes(5, 400) == [100, 200, 400]
    assert all("incumbent" in r.objective for r in race.rounds)
    assert [len(r.kept) for r in race.rounds] == [3, 2, 1]
    assert race.winner.label == "r1+r5" and race.winner.replicates == (1, 5)
    for arm in ("incumbent", 2.0):  # survivors only run the episodes they have not run
        ranges = [(s, e) for k, s, e in calls if k == (None if arm == "incumbent" else arm)]
        assert ranges == [(0, 100), (100, 200), (200, 400)]
    assert sum(e - s for _, s, e in calls) == race_cost(5, 400)
    with pytest.raises(ValueError, match="one incumbent"):
        successive_halving([Arm("incumbent", None)], evaluate, Objective(), CONFIRM_SEED, 10)


# -- the incumbent is an arm, and kept when nothing beats it ------------------------------------


def _spec_with_a_bad_space() -> ExperimentSpec:
    """tune_pid whose space holds only poor gains; its own (the fitted defaults) are good.

    A wide settle band confirmed by one reading stops early: 36 % success against 74 % for
    the defaults on 200 episodes of the release hold-out seed.
    """
    spec = load_spec(EXPERIMENTS / "tune_pid.toml")
    data = spec.model_dump()
    data["tune"]["space"] = {
        "controller.params.settle_band": {"low": 0.28, "high": 0.3},
        "controller.params.settle_count": {"low": 1, "high": 1.5, "integer": True},
        "controller.params.pace": {"low": 0.0, "high": 0.02},
    }
    return ExperimentSpec.model_validate(changed(data, {}))


def test_the_incumbent_is_kept_when_no_replicate_beats_it(tmp_path):
    spec = _spec_with_a_bad_space()
    budget = api.TuneBudget(trials=1, train_episodes=5, holdout_episodes=60, replicates=3)
    out = tmp_path / "t"
    result = api.tune(spec, budget, out=out)
    assert result.holdout[0].arm.label == "incumbent" and result.holdout[0].arm.params is None
    assert all("incumbent" in r.objective for r in result.race.rounds)
    # the spec's current gains, read from the law's defaults (the spec sets none)
    assert result.incumbent == {
        "controller.params.settle_band": 0.11,
        "controller.params.settle_count": 2,
        "controller.params.pace": 0.17,
    }
    assert not result.recommended and result.beating == 0
    assert result.gains == result.incumbent
    assert result.verdict().startswith("keep your current gains")
    versus = result.winner.vs_incumbent
    assert versus is not None and versus.objective.high >= 0 and versus.success < 0
    block = {row[0]: row[1] for row in result.table().rows}
    assert block["verdict"] == "keep your current gains"
    assert block["gains"] == "settle_band=0.11, settle_count=2, pace=0.17"
    assert block["replicates beating current"] == "0 of 3"
    data = result.to_dict()["recommendation"]
    assert data["recommended"] is False and data["gains"] == result.incumbent
    best = (out / "best.toml").read_text()
    assert best.startswith("# keep your current gains")
    assert tomllib.loads(best)["controller"]["params"] == {
        "settle_band": 0.11,
        "settle_count": 2,
        "pace": 0.17,
    }
    protocol = result.to_dict()["protocol"]
    assert protocol["train_seeds"] == [seed for seed, _ in replicate_seeds(3)]
    assert protocol["sampler_seeds"] == [0, 1, 2]
    assert (protocol["confirm_seed"], protocol["holdout_seed"]) == (
        CONFIRM_SEED,
        RELEASE_HOLDOUT_SEED,
    )


def test_a_seed_offset_moves_the_replicates_along_the_ledger():
    spec = _spec_with_a_bad_space()
    budget = api.TuneBudget(trials=1, train_episodes=3, holdout_episodes=4, replicates=2)
    result = api.tune(spec, budget, seed_offset=3)
    assert [(r.train_seed, r.sampler_seed) for r in result.replicates] == replicate_seeds(2, 3)
    with pytest.raises(api.SpecError, match="the ledger has"):
        api.tune(spec, api.TuneBudget(trials=1, replicates=5), seed_offset=4)
