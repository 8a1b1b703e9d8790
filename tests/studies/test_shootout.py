"""The shoot-out protocol: contender spaces, paired statistics and a ranking with ties."""

from __future__ import annotations

import inspect
from typing import ClassVar

import pytest

import controllers
from controllers.registry import CONTROLLERS
from opar_sim.running.search import apply_params
from opar_sim.spec.build import load_spec, parse_spec
from opar_sim.spec.schema import Objective
from opar_sim.studies.ablation import PACED, VARIANTS, arms, gains_of, score_arms
from opar_sim.studies.contender import (
    CONFIRM_PATH,
    Tuned,
    check_space,
    contender_data,
    contender_space,
    corners,
    default_contenders,
)
from opar_sim.studies.standings import standings, tie_ranks
from tests.conftest import SPEC

SHIPPED = ("pid", "threshold", "confidence", "fixed_interval", "stall_counter", "open_loop")


def rows(wins, tokens=1000):
    return [
        {"episode": i, "success": w, "steps": 5, "tokens": tokens, "replans": 0}
        for i, w in enumerate(wins)
    ]


def contender(name, wins, tokens=1000):
    return Tuned(name, {}, {}, 0.0, [], rows(wins, tokens))


@pytest.mark.parametrize("name", SHIPPED)
def test_every_shipped_controller_documents_a_space_of_its_own_parameters(name):
    factory = CONTROLLERS.factories[name]
    check_space(name, factory)  # raises on a name the constructor does not take
    accepted = set(inspect.signature(factory).parameters)
    assert set(factory.SPACE) <= accepted
    space = contender_space(factory)
    assert space[CONFIRM_PATH].integer and (space[CONFIRM_PATH].low, space[CONFIRM_PATH].high) == (
        1,
        3,
    )
    for corner in corners(space):  # both corners build the controller
        params = {p.rsplit(".", 1)[-1]: v for p, v in corner.items() if p != CONFIRM_PATH}
        controllers.make(name, **params)


def test_open_loop_tunes_only_the_shared_confirmation():
    assert list(contender_space(CONTROLLERS.factories["open_loop"])) == [CONFIRM_PATH]


def test_the_oracle_is_not_a_contender():
    assert "oracle" not in default_contenders(CONTROLLERS)
    assert set(SHIPPED) <= set(default_contenders(CONTROLLERS))


def test_a_space_naming_an_unknown_parameter_is_refused():
    class Bad:
        SPACE: ClassVar[dict[str, tuple[float, float]]] = {"gain": (0.0, 1.0)}

        def __init__(self, kp: float = 1.0) -> None: ...

    with pytest.raises(ValueError, match="unknown parameters"):
        check_space("bad", Bad)


def test_contender_data_keeps_the_specs_own_parameters_and_runs_one_controller():
    data = load_spec(SPEC).model_dump()
    pid = contender_data(data, "pid")
    assert pid["controller"] == {"name": "pid", "params": data["controller"]["params"]}
    assert "compare" not in pid and "tune" not in pid
    assert contender_data(data, "threshold")["controller"] == {"name": "threshold", "params": {}}
    spec = parse_spec(apply_params(pid, {CONFIRM_PATH: 2, "controller.params.kp": 0.5}))
    assert spec.guards.confirm == 2 and spec.controller.params["kp"] == 0.5


def test_ties_are_ranked_as_ties():
    # a solves episodes 0-159 of 200; b the same but 0-4 (5 discordant pairs: p = 1/16);
    # c only 0-99.  a and b differ by chance, both beat c.
    a = [i < 160 for i in range(200)]
    b = [5 <= i < 160 for i in range(200)]
    c = [i < 100 for i in range(200)]
    ranked, pairs = standings(
        [contender("c", c), contender("b", b), contender("a", a)], Objective()
    )
    by = {s.name: s for s in ranked}
    assert [s.name for s in ranked] == ["a", "b", "c"]
    assert [by[n].rank for n in "abc"] == [1, 1, 3]
    assert by["b"].discordant == (0, 5)
    assert by["b"].p_mcnemar == 2 / 32
    # Holm over the three pairs: the largest raw p (1/16) is multiplied by 1
    assert by["b"].p_holm == 2 / 32
    assert by["c"].p_mcnemar == 2 / 2**60
    assert by["c"].success_diff == pytest.approx(-0.3, abs=1e-12)
    assert by["c"].objective_diff.mean == pytest.approx(0.3, abs=1e-12)
    assert {(p.a, p.b) for p in pairs} == {("c", "b"), ("c", "a"), ("b", "a")}


def test_tie_ranks_count_only_significantly_better_contenders():
    pairs = {(0, 1): 0.2, (0, 2): 0.01, (1, 2): 0.3}
    assert tie_ranks([0.8, 0.78, 0.6], pairs) == [1, 1, 2]
    assert tie_ranks([0.5, 0.5, 0.5], {(0, 1): 0.0, (0, 2): 0.0, (1, 2): 0.0}) == [1, 1, 1]


def test_standings_refuse_contenders_run_on_different_episodes():
    other = Tuned("x", {}, {}, 0.0, [], [{**rows([True])[0], "episode": 7}])
    with pytest.raises(ValueError, match="same held-out episodes"):
        standings([contender("a", [True]), other], Objective())


def test_ablation_arms_switch_the_terms_off_and_put_the_full_law_first():
    plan = arms()
    assert (plan[0].variant, plan[0].settle_count) == ("PID", 2)
    assert len(plan) == 2 * (len(VARIANTS) - len(PACED))  # no pace: no no-pace arm
    defaults = {"kp": 1.0, "ki": 0.03, "kd": 6.0}
    gains = {a.label: gains_of({"kp": 2.0}, a, defaults) for a in plan}
    assert gains["PID, settle 2"] == {"kp": 2.0, "ki": 0.03, "kd": 6.0}
    assert gains["PI, settle 1"] == {"kp": 2.0, "ki": 0.03, "kd": 0.0}
    assert gains["PD, settle 2"] == {"kp": 2.0, "ki": 0.0, "kd": 6.0}
    assert gains["P, settle 1"] == {"kp": 2.0, "ki": 0.0, "kd": 0.0}
    assert gains["I, settle 2"] == {"kp": 0.0, "ki": 0.03, "kd": 0.0}


def test_ablation_of_a_paced_law_with_its_own_settle_count():
    plan = arms(settle_count=1, pace=0.1)
    assert [a.label for a in plan][:2] == ["PID, settle 1", "PID, settle 2"]
    assert len(plan) == 2 * len(VARIANTS)
    (no_pace,) = [a for a in plan if a.label == "PID, no pace, settle 1"]
    assert no_pace.changes == {"controller.params.pace": 0.0, "controller.params.settle_count": 1}


def test_ablation_pairs_every_arm_against_the_reference():
    plan = arms()[:3]
    ref = [i < 50 for i in range(100)]
    same = list(ref)
    worse = [i < 30 for i in range(100)]
    results = score_arms(
        [(plan[0], {}, rows(ref)), (plan[1], {}, rows(same, 900)), (plan[2], {}, rows(worse))],
        Objective(),
    )
    assert results[0].p_mcnemar == 1.0 and results[0].success_diff == 0.0
    assert results[1].discordant == (0, 0) and results[1].p_mcnemar == 1.0
    assert results[1].tokens_diff.mean == -100.0
    assert results[2].discordant == (0, 20) and results[2].p_mcnemar == 2 / 2**20
    assert results[2].p_holm == min(1.0, 2 * (2 / 2**20))


def test_a_screened_search_picks_the_finalist_the_reference_scores_best():
    """Screened trials rank the finalists; the reference engine's re-score picks the winner."""
    from opar_sim.spec.schema import ParamRange
    from opar_sim.studies.contender import Budget, tune_contender

    space = {"controller.params.x": ParamRange(low=0, high=9, integer=True)}
    calls = {"screen": [], "reference": []}

    def score_rows(value, episodes):  # objective = failure: the share of failed episodes
        failed = round(value * episodes)
        return [{**row, "success": row["episode"] >= failed} for row in rows([True] * episodes)]

    def screen(params, episodes, seed):  # the screen prefers large x
        calls["screen"].append((params, episodes, seed))
        return score_rows(1 - params["controller.params.x"] / 10, episodes)

    def reference(params, episodes, seed):  # the reference disagrees: it prefers small x
        calls["reference"].append((params, episodes, seed))
        return score_rows(params["controller.params.x"] / 10, episodes)

    budget = Budget(trials=10, train_episodes=10, holdout_episodes=4, sampler="tpe")
    tuned = tune_contender("x", space, reference, Objective(), budget, screen=screen, finalists=3)
    assert tuned.screened == "batch" and len(tuned.finalists) == 3
    screened = sorted({c[0]["controller.params.x"] for c in calls["screen"]}, reverse=True)
    # the finalists are the three best screened (largest x) distinct trials
    assert sorted(f.params["controller.params.x"] for f in tuned.finalists) == sorted(screened[:3])
    best = min(tuned.finalists, key=lambda f: (f.score, f.number))
    assert tuned.best_params == best.params and tuned.train_score == best.score
    # the winner is the smallest finalist, not the screen's favourite
    assert tuned.best_params["controller.params.x"] == screened[2] < screened[0]
    assert tuned.train_score == screened[2] / 10
    finalist_runs = [c for c in calls["reference"] if c[2] == budget.train_seed]
    assert len(finalist_runs) == 3 and all(c[1] == 10 for c in finalist_runs)
    holdout = [c for c in calls["reference"] if c[2] == budget.holdout_seed]
    assert holdout == [(tuned.best_params, 4, budget.holdout_seed)]
    assert all(c[2] == budget.train_seed for c in calls["screen"])  # no held-out seed screened
