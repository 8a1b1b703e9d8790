"""step_info follows python-control's definitions with final value 1.0 (docs/design.md §6)."""

from __future__ import annotations

import math

import control
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from opar_sim.measure.metrics import episode_response, error_integrals, estimate_gap, step_info

T = np.linspace(0.0, 30.0, 601)


def second_order(zeta: float, wn: float = 1.0, t: np.ndarray = T) -> np.ndarray:
    wd = wn * math.sqrt(1 - zeta**2)
    return 1 - np.exp(-zeta * wn * t) * (
        np.cos(wd * t) + zeta / math.sqrt(1 - zeta**2) * np.sin(wd * t)
    )


SIGNALS = {
    "first order": 1 - np.exp(-T / 3),
    "overshooting (ζ = 0.3)": second_order(0.3),
    "lightly damped (ζ = 0.05)": second_order(0.05),
    "not settled: ends outside the band": np.minimum(T / 10, 1.0) * (1 + 0.1 * np.sin(T)),
    "settles above the band then drops in": np.clip(T / 10, 0, 1.05) - 0.04 * (T > 25),
    "agent staircase": np.floor(np.clip(T / 4, 0, 5)) / 5,
    "undershoot first": second_order(0.5) - 0.3 * np.exp(-T) * np.sin(3 * T) - 0.05 * (T < 1),
}


def assert_agrees(ours: dict[str, float], theirs: dict[str, float]) -> None:
    assert set(ours) == set(theirs)
    for key, value in theirs.items():
        assert ours[key] == pytest.approx(value, rel=1e-12, abs=1e-12, nan_ok=True), key


@pytest.mark.parametrize("name", list(SIGNALS))
def test_step_info_agrees_with_python_control(name):
    y = SIGNALS[name]
    ours = step_info(y, T).as_control_dict()
    assert_agrees(ours, control.step_info(y, T, yfinal=1.0))


def test_an_unsettled_signal_has_no_settling_time():
    info = step_info(SIGNALS["not settled: ends outside the band"], T)
    assert math.isnan(info.settling_time) and not info.settled


def test_overshoot_is_in_percent_of_the_final_value():
    info = step_info(second_order(0.3), T)
    expected = 100 * math.exp(-math.pi * 0.3 / math.sqrt(1 - 0.09))
    assert info.overshoot == pytest.approx(expected, rel=1e-3)


def test_python_control_keys_index_the_result():
    info = step_info(SIGNALS["first order"], T)
    assert info["RiseTime"] == info.rise_time
    assert info["overshoot"] == 0.0
    with pytest.raises(KeyError):
        info["Bandwidth"]


def test_a_signal_that_never_reaches_90_percent_has_no_rise_time():
    """python-control raises here; the metric is NaN, like an unsettled settling time."""
    info = step_info([0.0, 0.2, 0.5, 0.8, 0.8], [0, 1, 2, 3, 4])
    assert math.isnan(info.rise_time) and math.isnan(info.settling_time)
    assert info.steady_state_error == pytest.approx(0.2)
    assert info.peak == 0.8 and info.peak_time == 3.0


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.floats(0.0, 1.3), min_size=2, max_size=40),
    st.lists(st.floats(0.01, 5.0), min_size=40, max_size=40),
)
def test_step_info_agrees_with_python_control_on_random_responses(values, gaps):
    y = np.array([0.0, *values, 0.95])  # reaches 10 % and 90 %, as python-control needs
    t = np.concatenate(([0.0], np.cumsum(gaps[: len(y) - 1])))
    assert_agrees(step_info(y, t).as_control_dict(), control.step_info(y, t, yfinal=1.0))


def test_error_integrals_hold_each_sample_until_the_next():
    iae, ise, itae = error_integrals([0.0, 0.5, 1.0], [0.0, 2.0, 3.0])
    assert iae == pytest.approx(1 * 2 + 0.5 * 1)
    assert ise == pytest.approx(1 * 2 + 0.25 * 1)
    assert itae == pytest.approx(1 * (4 - 0) / 2 + 0.5 * (9 - 4) / 2)


def test_a_horizon_makes_an_early_stop_keep_paying_its_error():
    iae, _, _ = error_integrals([0.0, 0.6], [0.0, 1.0], horizon=5.0)
    assert iae == pytest.approx(1.0 + 0.4 * 4)


def test_the_estimate_gap_is_signed_toward_over_confidence():
    gap = estimate_gap([0.2, 0.4, 0.6], [0.4, 0.5, 0.9])
    assert gap.mean_gap == pytest.approx(0.2)
    assert gap.mean_abs_gap == pytest.approx(0.2)
    assert gap.final_gap == pytest.approx(0.3)


def test_an_episode_response_starts_from_zero_at_time_zero():
    r = episode_response([0.5, 1.0], [0.6, 1.0], [10.0, 20.0])
    assert r.true.rise_time == pytest.approx(10.0)  # 10 % first met at 10 s, 90 % at 20 s
    assert r.true.settling_time == 20.0
    assert r.estimate.settled
    frame = r.to_frame()
    assert list(frame.index) == ["true", "estimate"]
    assert frame.loc["true", "settling_time"] == 20.0


def test_step_info_rejects_mismatched_or_decreasing_times():
    with pytest.raises(ValueError, match="one length"):
        step_info([0.0, 1.0], [0.0])
    with pytest.raises(ValueError, match="must not decrease"):
        step_info([0.0, 1.0], [1.0, 0.0])
