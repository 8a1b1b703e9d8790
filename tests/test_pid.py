"""The cognitive PID: the textbook discrete PID of DESIGN.md §6, exactly."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controllers import CognitivePID

finite = st.floats(min_value=-10, max_value=10, allow_nan=False)
dts = st.floats(min_value=1e-3, max_value=100, allow_nan=False)


def textbook(kp: float, ki: float, kd: float, errors: list[float], dts_: list[float]) -> list:
    out, integral, previous = [], 0.0, None
    for e, dt in zip(errors, dts_, strict=True):
        integral += ki * e * dt
        d = 0.0 if previous is None else kd * (e - previous) / dt
        previous = e
        out.append((kp * e, integral, d, kp * e + integral + d))
    return out


@given(
    gains=st.tuples(st.floats(0, 10), st.floats(0, 10), st.floats(0, 10)),
    samples=st.lists(st.tuples(finite, dts), min_size=1, max_size=40),
)
def test_equals_the_textbook_discrete_pid(gains, samples):
    kp, ki, kd = gains
    pid = CognitivePID(kp, ki, kd)
    errors = [e for e, _ in samples]
    steps = [dt for _, dt in samples]
    for (p, i, d, u), e, dt in zip(textbook(kp, ki, kd, errors, steps), errors, steps, strict=True):
        assert pid.update(e, dt) == u
        assert pid.components == (p, i, d)


def test_known_values():
    pid = CognitivePID(2.0, 0.5, 3.0)
    assert pid.update(1.0, 2.0) == 2.0 + 1.0 + 0.0  # D is 0 on the first update
    assert pid.components == (2.0, 1.0, 0.0)
    u = pid.update(0.5, 0.5)  # P = 1, I = 1 + 0.125, D = 3 * (0.5 - 1) / 0.5 = -3
    assert pid.components == (1.0, 1.125, -3.0)
    assert u == pytest.approx(-0.875)


def test_dt_zero_gives_no_derivative_and_no_integral():
    pid = CognitivePID(1.0, 1.0, 1.0)
    pid.update(1.0, 1.0)
    assert pid.update(0.0, 0.0) == 0.0 + 1.0 + 0.0


def test_reset_restores_the_initial_behaviour():
    pid = CognitivePID(1.0, 0.5, 2.0)
    first = [pid.update(e, 1.5) for e in (1.0, 0.7, 0.9)]
    pid.reset()
    assert pid.components == (0.0, 0.0, 0.0)
    assert [pid.update(e, 1.5) for e in (1.0, 0.7, 0.9)] == first


@pytest.mark.parametrize("bad", [{"kp": -1.0}, {"ki": -0.1}, {"kd": math.nan}])
def test_negative_or_nan_gains_are_rejected(bad):
    gains = {"kp": 1.0, "ki": 0.1, "kd": 1.0} | bad
    with pytest.raises(ValueError, match=next(iter(bad))):
        CognitivePID(**gains)


def test_non_finite_error_is_rejected():
    with pytest.raises(ValueError, match="finite"):
        CognitivePID(1, 1, 1).update(math.inf, 1.0)
