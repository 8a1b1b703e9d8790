"""The cognitive PID: the textbook discrete PID of docs/design.md §6, exactly."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from controllers import CognitivePID, ReflectContext
from opar_sim import Evaluation

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


# -- options: the control-engineering standard ----------------------------------------------


def test_integral_clamp_stops_windup_and_recovers_at_once():
    clamped = CognitivePID(0.0, 1.0, 0.0, integral_limits=(-1.0, 2.0))
    free = CognitivePID(0.0, 1.0, 0.0)
    for _ in range(10):  # a long saturation: the error stays at 1 for 10 s
        clamped.update(1.0, 1.0)
        free.update(1.0, 1.0)
    assert clamped.components[1] == 2.0
    assert free.components[1] == 10.0
    assert clamped.update(-1.0, 1.0) == 1.0  # unwinds from the clamp, not from 10
    assert free.update(-1.0, 1.0) == 9.0


def test_output_limits_clamp_the_output_and_by_default_the_integral():
    pid = CognitivePID(5.0, 1.0, 0.0, output_limits=(0.0, 1.5))
    assert pid.update(1.0, 1.0) == 1.5  # P = 5 + I = 1 → clamped
    for _ in range(5):
        pid.update(1.0, 1.0)
    assert pid.components[1] == 1.5  # the integral never asks for more than the output can give
    assert pid.update(-1.0, 1.0) == 0.0


def test_integral_leak_forgets_with_time_constant_one_over_lambda():
    pid = CognitivePID(0.0, 1.0, 0.0, integral_leak=0.1)
    pid.update(1.0, 2.0)  # I = 2
    pid.update(0.0, 10.0)  # no new error: I decays by exp(-0.1 * 10)
    assert pid.components[1] == pytest.approx(2.0 * math.exp(-1.0), rel=1e-12)
    pid.update(1.0, 2.0)
    assert pid.components[1] == pytest.approx(2.0 * math.exp(-1.0) * math.exp(-0.2) + 2.0)


def test_back_calculation_holds_the_integral_while_the_output_saturates():
    # open integral clamp, so only back-calculation fights windup
    pid = CognitivePID(
        1.0, 1.0, 0.0, output_limits=(-1.0, 1.0), integral_limits=(None, None), back_calculation=1.0
    )
    free = CognitivePID(1.0, 1.0, 0.0, output_limits=(-1.0, 1.0), integral_limits=(None, None))
    for _ in range(6):
        assert pid.update(1.0, 1.0) == 1.0
        free.update(1.0, 1.0)
    # each step adds ki·e·dt = 1 and takes back kt·(u_sat − u)·dt = 1·(1 − 2)·1
    assert pid.components[1] == 1.0
    assert free.components[1] == 6.0


def test_derivative_on_measurement_gives_no_kick_on_a_set_point_change():
    on_error = CognitivePID(0.0, 0.0, 2.0)
    on_measurement = CognitivePID(0.0, 0.0, 2.0, derivative_on="measurement")
    y = 0.4  # the measurement does not move; the goal does
    for pid in (on_error, on_measurement):
        pid.update(1.0 - y, 1.0)
        pid.setpoint = 0.5
    assert on_error.update(0.5 - y, 1.0) == pytest.approx(2.0 * (0.1 - 0.6))  # the kick
    assert on_measurement.update(0.5 - y, 1.0) == 0.0
    # an explicit measurement is used as given
    assert on_measurement.update(0.5 - 0.3, 0.5, measurement=0.3) == pytest.approx(2.0 * 0.1 / 0.5)


@given(samples=st.lists(st.tuples(finite, dts), min_size=1, max_size=30))
def test_derivative_on_measurement_equals_on_error_for_a_fixed_set_point(samples):
    on_error = CognitivePID(1.0, 0.5, 3.0)
    on_measurement = CognitivePID(1.0, 0.5, 3.0, derivative_on="measurement")
    for e, dt in samples:
        assert on_measurement.update(e, dt) == pytest.approx(on_error.update(e, dt), abs=1e-9)


def test_filtered_derivative_step_response_is_first_order():
    """A ramp error makes the raw derivative a step; the filter's output is kd·r·(1 − α^k)."""
    kd, tau, h, rate = 2.0, 4.0, 1.0, 0.05
    alpha = tau / (tau + h)
    pid = CognitivePID(0.0, 0.0, kd, tau=tau)
    for k in range(40):
        d = pid.update(rate * k * h, h)
        assert d == pytest.approx(kd * rate * (1.0 - alpha**k), rel=1e-12, abs=1e-15)
    assert d == pytest.approx(kd * rate, rel=1e-3)  # settles on the unfiltered derivative


def test_filtered_derivative_softens_an_error_step_into_a_decaying_kick():
    kd, tau, h = 2.0, 4.0, 0.5
    alpha = tau / (tau + h)
    filtered = CognitivePID(0.0, 0.0, kd, tau=tau)
    raw = CognitivePID(0.0, 0.0, kd)
    assert filtered.update(0.0, h) == raw.update(0.0, h) == 0.0
    assert raw.update(1.0, h) == kd / h  # the unfiltered kick: 4
    assert filtered.update(1.0, h) == pytest.approx(kd / (tau + h))
    for k in range(1, 10):
        assert filtered.update(1.0, h) == pytest.approx(alpha**k * kd / (tau + h), rel=1e-12)


def test_changing_ki_mid_run_causes_no_bump():
    """The integral stores ki·e·dt, so a new ki weighs only future error (Beauregard)."""
    pid = CognitivePID(1.0, 0.5, 0.0)
    for _ in range(4):
        before = pid.update(1.0, 2.0)  # I = 4
    pid.ki = 2.0
    after = pid.update(1.0, 0.0)  # no time passed: the output must not move
    assert after == before
    assert pid.update(1.0, 1.0) == 1.0 + 4.0 + 2.0


# -- properties for any finite input --------------------------------------------------------

any_finite = st.floats(allow_nan=False, allow_infinity=False)
any_dt = st.floats(min_value=0.0, allow_infinity=False) | st.just(0.0)
gain = st.floats(min_value=0.0, max_value=1e6, allow_nan=False)


@st.composite
def limit_pairs(draw):
    a, b = draw(st.floats(-1e3, 1e3)), draw(st.floats(-1e3, 1e3))
    return (min(a, b), max(a, b))


@given(
    gains=st.tuples(gain, gain, gain),
    out=limit_pairs(),
    clamp=limit_pairs(),
    options=st.fixed_dictionaries(
        {
            "tau": st.floats(0, 100),
            "integral_leak": st.floats(0, 10),
            "back_calculation": st.floats(0, 10),
            "derivative_on": st.sampled_from(["error", "measurement"]),
        }
    ),
    samples=st.lists(st.tuples(any_finite, any_dt), min_size=1, max_size=30),
)
def test_output_and_integral_stay_within_limits_and_finite(gains, out, clamp, options, samples):
    pid = CognitivePID(*gains, output_limits=out, integral_limits=clamp, **options)
    for e, dt in samples:
        u = pid.update(e, dt)
        p, i, d = pid.components
        assert out[0] <= u <= out[1]
        assert clamp[0] <= i <= clamp[1]
        assert all(math.isfinite(x) for x in (u, p, i, d))


@given(
    gains=st.tuples(gain, gain, gain),
    tau=st.floats(0, 1e6),
    samples=st.lists(st.tuples(any_finite, any_dt), min_size=1, max_size=30),
)
def test_no_nan_or_inf_for_any_finite_input_without_limits(gains, tau, samples):
    pid = CognitivePID(*gains, tau=tau)
    for e, dt in samples:
        u = pid.update(e, dt)
        assert math.isfinite(u)
        assert all(math.isfinite(x) for x in pid.components)


@given(samples=st.lists(finite, min_size=1, max_size=20), tau=st.floats(0, 10))
def test_dt_zero_never_moves_the_integral(samples, tau):
    pid = CognitivePID(1.0, 3.0, 2.0, tau=tau)
    pid.update(0.5, 1.0)
    integral = pid.components[1]
    for e in samples:
        pid.update(e, 0.0)
        assert pid.components[1] == integral


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ({"output_limits": (2.0, 1.0)}, "output_limits must have low <= high"),
        ({"integral_limits": (1.0,)}, "integral_limits must be a"),
        ({"output_limits": [0.0, "high"]}, "output_limits must be a pair of numbers"),
        ({"tau": -1.0}, "tau must be >= 0"),
        ({"tau": math.inf}, "tau must be finite"),
        ({"integral_leak": -0.1}, "integral_leak must be >= 0"),
        ({"derivative_on": "setpoint"}, "derivative_on must be"),
        ({"setpoint": math.nan}, "setpoint must be finite"),
    ],
)
def test_bad_options_are_rejected_naming_the_option(bad, message):
    with pytest.raises(ValueError, match=message):
        CognitivePID(1.0, 0.1, 1.0, **bad)


def test_derivative_on_measurement_equals_on_error_while_the_set_point_is_constant():
    rng = np.random.default_rng(11)
    laws = [CognitivePID(1.0, 0.03, 6.0, derivative_on=on) for on in ("error", "measurement")]
    now = 0.0
    for step in range(1, 60):
        dt = 0.0 if step == 1 else float(rng.exponential(10.0))
        now += dt
        evaluation = Evaluation(float(rng.random()), 1.0, 0.0, 0.5)
        ctx = ReflectContext(step, now, dt, 1, False, 0)
        on_error, on_measurement = (law.decide(evaluation, ctx) for law in laws)
        assert on_error.signal is on_measurement.signal
        # e − e_prev = −(y − y_prev) when e = 1 − y: the same up to rounding in the subtraction
        assert on_measurement.terms["d"] == pytest.approx(on_error.terms["d"], rel=1e-9, abs=1e-12)


def test_the_pid_options_are_declared_once_by_the_discrete_pid():
    import inspect

    from controllers import DiscretePID

    options = {
        name: p
        for name, p in inspect.signature(DiscretePID).parameters.items()
        if p.kind is p.KEYWORD_ONLY
    }
    assert set(options) == {
        "output_limits",
        "integral_limits",
        "integral_leak",
        "back_calculation",
        "derivative_on",
        "tau",
        "setpoint",
    }
    init = inspect.signature(CognitivePID.__init__).parameters
    assert not set(options) & set(init)  # passed on as **options, not declared again
    shown = inspect.signature(CognitivePID).parameters  # what the registry and reference read
    assert all(shown[name] == p for name, p in options.items())
    assert not any(p.kind is p.VAR_KEYWORD for p in shown.values())
    assert CognitivePID(tau=0.5, setpoint=0.9).tau == 0.5


def test_a_subclass_of_the_pid_shows_its_own_signature():
    import inspect

    class Tight(CognitivePID):
        def __init__(self, kp: float = 1.0, *, band: float = 0.1) -> None:
            super().__init__(kp, settle_band=band)

    assert list(inspect.signature(Tight).parameters) == ["kp", "band"]
