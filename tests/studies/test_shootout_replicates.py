"""The replicated shoot-out's standings on constructed held-out data.

A replicate-level comparison computed by hand (mean, t interval, p, Holm), ties printed as
ties, "(best)" only for a leader ahead of every other law, the budget rule and the ledger's
seeds in the protocol.
"""

from __future__ import annotations

import math

import pytest

from opar_sim.measure.replicates import episode_variance, replicate_diff, t_quantile
from opar_sim.measure.stats import holm
from opar_sim.spec.schema import Objective, ParamRange
from opar_sim.studies.contender import Tuned
from opar_sim.studies.replicated import LawArms, rank_laws
from opar_sim.studies.seeds import RELEASE_HOLDOUT_SEED, replicate_seeds
from opar_sim.studies.shootout_report import OUTSIDE_BUDGET, ShootoutBudget, ShootoutResult


def rows(wins, tokens=1000, replans=0):
    return [
        {"episode": i, "success": bool(w), "steps": 5, "tokens": tokens, "replans": replans}
        for i, w in enumerate(wins)
    ]


def law(name, replicate_wins, default_wins, dims=1):
    space = {f"controller.params.x{k}": ParamRange(low=0, high=1) for k in range(dims)}
    tuned = [
        Tuned(name, space, {"controller.params.x0": 0.1 * r}, 0.0, [], rows(w))
        for r, w in enumerate(replicate_wins)
    ]
    return LawArms(name, space, 5 * dims, tuned, rows(default_wins))


def first(k, n=200):
    return [i < k for i in range(n)]


def test_a_replicate_level_comparison_by_hand():
    # law A's three replicates solve these 4 held-out episodes, law B's these
    a = [[1, 1, 1, 0], [1, 1, 0, 0], [1, 1, 1, 1]]  # 0.75, 0.5, 1.0
    b = [[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 0, 0]]  # 0.25, 0.5, 0.5
    ranking = rank_laws([law("A", a, [1, 1, 0, 0]), law("B", b, [1, 0, 0, 0])], Objective())
    assert ranking.leader == "A"
    (b_row,) = [s for s in ranking.standings if s.name == "B"]
    d = b_row.vs_leader
    assert d is not None and d.diffs == pytest.approx([-0.5, 0.0, -0.5])
    assert d.mean == pytest.approx(-1 / 3) and d.sd == pytest.approx(math.sqrt(1 / 12))
    # e_i = mean_r B − mean_r A per episode: 0, −1/3, −2/3, −1/3; var(e) / 4 = (2/27) / 4
    assert episode_variance(b, a) == pytest.approx(1 / 54)
    se = math.sqrt(1 / 12 / 3 + 1 / 54)  # s²/R + the episodes' variance = 5/108
    assert se == pytest.approx(math.sqrt(5 / 108))
    half = 4.302652729911275 * se  # t(0.975, 2)
    assert (d.low, d.high) == pytest.approx((-1 / 3 - half, -1 / 3 + half), abs=1e-9)
    t = (1 / 3) / se
    assert d.p == pytest.approx(1 - t / math.sqrt(2 + t * t), abs=1e-12)  # 2 df, closed form
    assert b_row.vs_leader_holm == pytest.approx(d.p)  # one comparison: Holm is the raw p
    assert [s.rank for s in ranking.standings] == [1, 1] and not ranking.alone
    # tuning against the defaults: A's replicates minus its defaults' 0.5
    gain = ranking.standings[0].tuning_gain
    assert gain.diffs == pytest.approx([0.25, 0.0, 0.5]) and gain.mean == pytest.approx(0.25)


def test_ties_are_printed_as_ties_and_best_marks_only_a_clear_leader():
    # A and B differ by one episode in each replicate; C trails by 40 episodes in each
    a = [first(150), first(152), first(148)]
    b = [first(149), first(151), first(147)]
    c = [first(110), first(112), first(108)]
    laws = [law("C", c, first(100)), law("B", b, first(100)), law("A", a, first(100))]
    ranking = rank_laws(laws, Objective())
    by = {s.name: s for s in ranking.standings}
    assert [s.name for s in ranking.standings] == ["A", "B", "C"]
    assert (by["A"].rank, by["B"].rank, by["C"].rank) == (1, 1, 3)
    assert ranking.leader == "A" and not ranking.alone
    # Holm over the two comparisons with the leader, by hand
    raw = [by["B"].vs_leader.p, by["C"].vs_leader.p]
    assert [by["B"].vs_leader_holm, by["C"].vs_leader_holm] == pytest.approx(holm(raw))
    assert by["C"].vs_leader_holm == pytest.approx(min(1.0, 2 * min(raw)))
    assert by["B"].vs_leader_holm == pytest.approx(max(min(1.0, 2 * min(raw)), max(raw)))
    assert by["C"].vs_leader.mean == pytest.approx(-0.2)
    result = ShootoutResult("t", ShootoutBudget(replicates=3), Objective(), ranking)
    table = result.table()
    assert [r[0] for r in table.rows] == ["=1", "=1", "3"]
    assert [r[1] for r in table.rows] == ["A", "B", "C"]  # no "(best)": B ties A
    assert table.rows[0][4] == "leader" and table.rows[1][4].startswith("-0.5 [")


def test_the_rest_are_ranked_among_themselves_and_a_clear_leader_is_best():
    a = [first(180), first(182), first(178)]
    b = [first(120), first(122), first(118)]
    c = [first(119), first(121), first(117)]
    ranking = rank_laws(
        [law("A", a, first(100)), law("B", b, first(100)), law("C", c, first(100))],
        Objective(),
    )
    by = {s.name: s for s in ranking.standings}
    assert ranking.alone and (by["A"].rank, by["B"].rank, by["C"].rank) == (1, 2, 2)
    assert by["C"].tier_leader == "B"  # ranked against the best of the rest
    result = ShootoutResult("t", ShootoutBudget(replicates=3), Objective(), ranking)
    assert [r[:2] for r in result.table().rows] == [["1", "A (best)"], ["=2", "B"], ["=2", "C"]]
    assert "ranked among the rest: C vs B" in result.comparisons_table().notes[-1]


def test_laws_with_the_same_setting_in_every_replicate_still_carry_the_episodes_noise():
    # every replicate found the same setting: no spread, but 200 episodes are a sample
    a = [first(150)] * 3
    b = [first(146)] * 3
    ranking = rank_laws([law("A", a, first(150)), law("B", b, first(146))], Objective())
    d = ranking.standings[1].vs_leader
    assert d is not None and d.sd == 0.0 and d.mean == pytest.approx(-0.02)
    e = [0.0] * 146 + [1.0] * 4 + [0.0] * 50  # A − B per episode
    var = (sum((x - 0.02) ** 2 for x in e) / 199) / 200
    half = t_quantile(0.95, 2) * math.sqrt(var)
    assert (d.low, d.high) == pytest.approx((-0.02 - half, -0.02 + half))
    assert d.p > 0.05 and ranking.standings[1].rank == 1  # a tie, not "significant"
    assert replicate_diff([0.75] * 3, [0.73] * 3).p == 0.0  # without the episodes' noise


def test_the_printed_protocol_states_the_budget_rule_seeds_and_what_was_fitted_outside():
    ranking = rank_laws(
        [law("bayes", [first(150)] * 2, first(150)), law("pid", [first(140)] * 2, first(130), 8)],
        Objective(),
    )
    budget = ShootoutBudget(trials_per_dim=5, replicates=2, train_episodes=300)
    result = ShootoutResult("t", budget, Objective(), ranking)
    lines = result.protocol_lines()
    train = [seed for seed, _ in replicate_seeds(2)]
    assert f"tuning seed {train[0]}, {train[1]} with sampler seed 0, 1" in lines[0]
    assert "trials = 5 × d" in lines[1] and "bayes 1→5" in lines[1] and "pid 8→40" in lines[1]
    assert f"seed {RELEASE_HOLDOUT_SEED}" in lines[2]
    assert OUTSIDE_BUDGET["bayes"] in lines
    data = result.to_dict()
    assert data["protocol"]["train_seeds"] == train
    assert data["protocol"]["outside_budget"] == {"bayes": OUTSIDE_BUDGET["bayes"]}
    assert result.defaults_table().rows[1][0] == "pid"


def test_standings_refuse_laws_run_on_different_episodes_or_replicate_counts():
    with pytest.raises(ValueError, match="same held-out episodes"):
        rank_laws(
            [law("A", [first(5, 10)], first(5, 10)), law("B", [first(5, 9)], first(5, 9))],
            Objective(),
        )
    with pytest.raises(ValueError, match="same number of replicates"):
        rank_laws([law("A", [first(5)] * 2, first(5)), law("B", [first(5)], first(5))], Objective())
