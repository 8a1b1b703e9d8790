"""sprt's calibration and its guarantee: exact pieces, then a measured false-abandon rate."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

from opar_sim.measure.exact_intervals import clopper_pearson
from opar_sim.running.runner import simulate
from opar_sim.spec.build import load_spec
from opar_sim.studies.sprt import (
    EVALUATION_SEED,
    TUNING_SEED,
    abandon_curve,
    calibrate,
    done_boundary,
    pac_boundary,
    row_of,
    token_saving,
    with_controller,
)


def test_clopper_pearson_at_the_edges_has_a_closed_form():
    # k = 0: upper = 1 − (α/2)^(1/n); k = n: lower = (α/2)^(1/n)
    assert clopper_pearson(0, 50) == (0.0, pytest.approx(1 - 0.025 ** (1 / 50)))
    assert clopper_pearson(50, 50) == (pytest.approx(0.025 ** (1 / 50)), 1.0)
    low, high = clopper_pearson(5, 100)
    assert low < 0.05 < high
    assert (round(low, 4), round(high, 4)) == (0.0164, 0.1128)


def test_pac_boundary_is_the_smallest_value_with_a_small_enough_upper_bound():
    sups = [float(i) for i in range(100)] + [-math.inf] * 900  # 1000 episodes
    # b = 59: 40 above (CP upper 5.4 %); b = 61: 38 above, upper 5.17 %; b = 63: 36, 4.95 %
    assert clopper_pearson(36, 1000)[1] <= 0.05 < clopper_pearson(37, 1000)[1]
    assert pac_boundary(sups, 0.05) == 63.0
    assert pac_boundary([1.0, 2.0], 0.01) == math.inf


def step(done, complete, abandon=0.0):
    return (abandon, done, SimpleNamespace(complete=complete))


def brute_force(traces, abandon_at, rate):
    n = len(traces)
    best = math.inf
    for b in sorted({d for t in traces for _, d, _ in t}, reverse=True):
        false = 0
        for t in traces:
            for a, d, s in t:
                if d > b:
                    false += not s.complete
                    break
                if a > abandon_at:
                    break
        if clopper_pearson(false, n)[1] > rate:
            break
        best = b
    return best


def test_done_boundary_counts_the_first_crossing_before_the_give_up_stop():
    # 40 episodes that complete at a reading of 5; 2 that read 3 while not complete;
    # 1 that reads 9 while not complete but gives up first (S = 2 > 1 at step 1)
    good = [[step(1.0, False), step(5.0, True), step(7.0, True)]] * 40
    fooled = [[step(3.0, False), step(2.0, False)]] * 2
    stopped = [[step(0.5, False, abandon=2.0), step(9.0, False)]]
    traces = good + fooled + stopped
    # b >= 3: no false completion (CP upper 8.2 % with n = 43); b in [1, 3): 2 of 43
    assert clopper_pearson(0, 43)[1] <= 0.1 < clopper_pearson(2, 43)[1]
    assert done_boundary(traces, 1.0, 0.1) == 3.0 == brute_force(traces, 1.0, 0.1)
    # without the give-up stop the 9.0 reading is a false completion for b in [3, 9)
    assert done_boundary(traces, math.inf, 0.1) == 9.0 == brute_force(traces, math.inf, 0.1)


def test_the_false_abandon_rate_holds_on_held_out_episodes():
    """Calibrated on 600 tuning episodes, measured on 1500 evaluation episodes.

    The claim tested is the guarantee (a false-abandon share at most β = 0.05):
    the upper end of the share's exact 95 % interval, by every step, is at most β
    (the band lies below β, not merely touches it); the law must give up on some
    infeasible episodes (the test is not vacuous).
    """
    spec = load_spec("experiments/flight_booking_infeasible.toml")
    cal = calibrate(spec, episodes=600, seed=TUNING_SEED)
    assert math.isfinite(cal.params["abandon_boundary"])
    law = [
        row_of(r)
        for r in simulate(with_controller(spec, "sprt", cal.params), 1500, EVALUATION_SEED)
    ]
    curve = abandon_curve(law, spec.limits.max_steps)
    assert max(high for _, high in curve.band()) <= 0.05
    assert curve.by_step == sorted(curve.by_step)
    assert curve.outcomes.get("gave_up", 0) > 100
    thr = with_controller(spec, "threshold", {})
    base = [row_of(r) for r in simulate(thr, 1500, EVALUATION_SEED)]
    saving = token_saving(base, law)
    assert saving["saving_ci95"][0] > 0  # it saves tokens where threshold fails


def test_tables_and_boundaries_are_fitted_on_disjoint_halves():
    """The tables count the first half's steps only; the boundaries read the second half."""
    spec = load_spec("experiments/flight_booking_infeasible.toml")
    cal = calibrate(spec, episodes=80, seed=TUNING_SEED)
    assert (cal.table_episodes, cal.boundary_episodes) == (range(40), range(40, 80))
    inf = {"done_boundary": math.inf, "abandon_boundary": math.inf}
    first = list(simulate(with_controller(spec, "sprt", inf), 40, TUNING_SEED))
    second = list(simulate(with_controller(spec, "sprt", inf), 40, TUNING_SEED, start=40))
    evaluated = sum(s.evaluation is not None for r in first for s in r.steps)
    assert sum(map(sum, cal.done_counts)) == evaluated == sum(map(sum, cal.act_counts))
    readings = [[s for s in r.steps if s.evaluation is not None] for r in second]
    assert cal.feasible_episodes == sum(steps[0].feasible for steps in readings if steps)
    assert cal.params["calibrated_task"] == "flight_booking"
    assert cal.params["calibrated_horizon"] == spec.limits.max_steps == 20
    with pytest.raises(ValueError, match="at least 2 episodes"):
        calibrate(spec, episodes=1)


def test_the_shipped_tables_and_boundaries_are_that_calibration():
    """controllers/sprt.py's constants: 4,000 tuning episodes, tables 0..1999, boundaries rest."""
    from controllers import sprt as law

    spec = load_spec("experiments/flight_booking_infeasible.toml")
    grid: dict[tuple[float, float], tuple[float, float]] = {}
    cal = calibrate(spec, 4000, TUNING_SEED, grid=law.RATES, grid_out=grid)
    assert tuple(cal.params["done_llr"]) == law.DONE_LLR
    assert tuple(cal.params["abandon_llr"]) == law.ABANDON_LLR
    assert (cal.params["done_boundary"], cal.params["abandon_boundary"]) == (
        law.DONE_BOUNDARY,
        law.ABANDON_BOUNDARY,
    )
    assert {k: v[0] for k, v in grid.items()} == law.DONE_AT
    assert {b: grid[(a, b)][1] for (a, b) in grid} == law.ABANDON_AT
    assert (cal.params["calibrated_task"], cal.params["calibrated_horizon"]) == (
        law.CALIBRATED_TASK,
        law.CALIBRATED_HORIZON,
    )
