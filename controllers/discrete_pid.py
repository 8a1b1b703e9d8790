"""A discrete PID to control-engineering standard, clocked by simulated seconds.

Built with no options it is the textbook discrete PID of docs/design.md §6:

* P = kp·e
* I = Σ ki·e·dt (the integral stores ki·e·dt, not Σ e·dt, so a change of ki
  mid-run scales only future error and the output does not jump: Beauregard's
  "Improving the Beginner's PID", tuning changes)
* D = kd·(e − e_prev)/dt, 0 on the first update and when dt = 0.

The options are what simple-pid and Beauregard add, plus a derivative filter:

``output_limits``
    (low, high) clamp of the output; ``None`` or ±inf leaves a side open.
``integral_limits``
    (low, high) clamp of the I term (anti-windup by clamping).  When not
    given it defaults to ``output_limits``, as in simple-pid: the integral
    can never ask for more than the actuator can give.
``integral_leak``
    λ in 1/s: the integral decays as I·exp(−λ·dt) before each addition, so
    old errors are forgotten with time constant 1/λ (a leaky integrator).
``back_calculation``
    tracking gain kt in 1/s: while the output is saturated the integral is
    driven back by kt·(u_sat − u)·dt (Åström–Hägglund anti-windup).
``derivative_on``
    ``"error"`` (textbook) or ``"measurement"``: D = −kd·(y − y_prev)/dt with
    y the measurement, so a set-point change gives no derivative kick.  The
    measurement is passed to ``update`` or taken as ``setpoint − error``.
``tau``
    time constant (s) of a first-order filter on the derivative, the backward
    Euler form of kd·s/(τs + 1):
    D_k = τ/(τ + dt)·D_{k−1} + kd·(e_k − e_{k−1})/(τ + dt).
    τ = 0 is the unfiltered derivative exactly.

Gains (``kp``, ``ki``, ``kd``) and ``setpoint`` are plain attributes and may be
changed between updates: a new ki weighs only future error; a new kd acts on
the next difference (with a filter, the old filtered D decays through it).
``integral`` may be set, e.g. to initialise bumplessly when taking over from
another law (I = u − P).  For any finite input the state stays finite: a term
that overflows is held at ±1e300 (never NaN, never inf in a record).
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Sequence
from typing import Any

from controllers.base import require_non_negative

Limits = tuple[float, float]

TERM_BOUND = 1e300  # |P|, |I|, |D| after an overflow; three of them still sum to a finite float
DERIVATIVE_SOURCES = ("error", "measurement")


def as_limits(name: str, value: Sequence[float | None] | None) -> Limits:
    """Normalise ``(low, high)`` (None = open side) to a pair of floats, or raise ValueError."""
    if value is None:
        return (-math.inf, math.inf)
    if not isinstance(value, list | tuple) or len(value) != 2:  # a table of two keys is not
        shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
        raise ValueError(f"{name} must be a (low, high) pair such as [0.0, 1.0], got {shown}")
    try:
        low = -math.inf if value[0] is None else float(value[0])
        high = math.inf if value[1] is None else float(value[1])
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"{name} must be a pair of numbers, got {value!r}") from None
    if math.isnan(low) or math.isnan(high) or low > high:
        raise ValueError(f"{name} must have low <= high, got {value!r}")
    return (low, high)


def with_options(init: inspect.Signature) -> inspect.Signature:
    """A subclass's signature: its ``__init__``'s without ``self``, ``**options`` spelled out.

    Args:
        init: The signature of the subclass's ``__init__``.

    Returns:
        The signature a caller sees: the ``**`` parameter replaced by the keyword-only
        options of ``DiscretePID`` the subclass does not name itself.
    """
    own = list(init.parameters.values())[1:]
    if not any(p.kind is p.VAR_KEYWORD for p in own):
        return init.replace(parameters=own)
    named = {p.name for p in own}
    options = [
        p
        for p in inspect.signature(DiscretePID.__init__).parameters.values()
        if p.kind is p.KEYWORD_ONLY and p.name not in named
    ]
    return init.replace(parameters=[p for p in own if p.kind is not p.VAR_KEYWORD] + options)


def _bounded(x: float) -> float:
    """A term after an overflow: ±inf held at ±TERM_BOUND; NaN (0·inf: a zero gain) is 0."""
    if math.isnan(x):
        return 0.0
    return max(-TERM_BOUND, min(TERM_BOUND, x))


class DiscretePID:
    """PID on an error sampled at irregular simulated times, with the options above.

    The options are declared here only: a law built on it takes them as
    ``**options`` and passes them on (``CognitivePID(kp, ki, kd, **options)``);
    its signature, which the registry checks keywords against and the spec
    reference lists, shows them in place of ``**options`` (``__init_subclass__``).
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # set on every subclass, so a subclass of a subclass shows its own __init__
        cls.__signature__ = with_options(inspect.signature(cls.__init__))  # type: ignore[attr-defined]

    def __init__(
        self,
        kp: float = 1.0,
        ki: float = 0.0,
        kd: float = 0.0,
        *,
        output_limits: Sequence[float | None] | None = None,
        integral_limits: Sequence[float | None] | None = None,
        integral_leak: float = 0.0,
        back_calculation: float = 0.0,
        derivative_on: str = "error",
        tau: float = 0.0,
        setpoint: float = 1.0,
    ) -> None:
        """Build the PID; every option is described in the module docstring.

        Args:
            kp: Proportional gain (>= 0).
            ki: Integral gain, per simulated second (>= 0).
            kd: Derivative gain, in simulated seconds (>= 0).
            output_limits: (low, high) clamp of the output; None leaves it open.
            integral_limits: (low, high) clamp of the I term; defaults to ``output_limits``.
            integral_leak: Decay rate λ of the integral, in 1/s (0: no leak).
            back_calculation: Anti-windup tracking gain kt, in 1/s (0: off).
            derivative_on: ``"error"`` or ``"measurement"`` (no derivative kick).
            tau: Time constant of the derivative filter, in s (0: unfiltered).
            setpoint: The target of the measurement.

        Raises:
            ValueError: For a negative or infinite gain or rate, bad limits, an
                unknown ``derivative_on`` or a non-finite ``setpoint``.
        """
        require_non_negative(
            kp=kp,
            ki=ki,
            kd=kd,
            integral_leak=integral_leak,
            back_calculation=back_calculation,
            tau=tau,
        )
        for name, value in (
            ("integral_leak", integral_leak),
            ("back_calculation", back_calculation),
            ("tau", tau),
        ):
            if math.isinf(value):
                raise ValueError(f"{name} must be finite, got {value}")
        if derivative_on not in DERIVATIVE_SOURCES:
            raise ValueError(
                f"derivative_on must be 'error' or 'measurement', got {derivative_on!r}"
            )
        if not math.isfinite(setpoint):
            raise ValueError(f"setpoint must be finite, got {setpoint}")
        self.kp = kp
        self.ki = ki
        self.kd = kd
        self.output_limits = as_limits("output_limits", output_limits)
        self.integral_limits = (
            as_limits("integral_limits", integral_limits)
            if integral_limits is not None
            else self.output_limits
        )
        self.integral_leak = integral_leak
        self.back_calculation = back_calculation
        self.on_measurement = derivative_on == "measurement"
        self.tau = tau
        self.setpoint = setpoint
        DiscretePID.reset(self)

    def reset(self) -> None:
        """Clear the integral, the derivative memory and the filter state."""
        self._p = 0.0
        self._i = 0.0
        self._d = 0.0
        self._previous: float | None = None  # the last error, or measurement
        self._excess = 0.0  # u_sat − u of the last update, for back-calculation

    def update(self, error: float, dt: float, *, measurement: float | None = None) -> float:
        """Advance by one sample of ``error`` taken ``dt`` simulated seconds after the last.

        Args:
            error: The error sample e (finite).
            dt: Simulated seconds since the previous sample (finite, >= 0; 0 gives no D).
            measurement: The measurement y, read only with ``derivative_on="measurement"``
                (defaults to ``setpoint − error``).

        Returns:
            The control effort u = P + I + D, clamped to ``output_limits``.

        Raises:
            ValueError: For a non-finite ``error`` or measurement, or a bad ``dt``.
        """
        if not math.isfinite(error):
            raise ValueError(f"error must be finite, got {error}")
        if not 0.0 <= dt < math.inf:
            raise ValueError(f"dt must be finite and >= 0, got {dt}")
        p = self.kp * error
        i = self._i
        if self.integral_leak:
            i *= math.exp(-self.integral_leak * dt)
        i += self.ki * error * dt
        if self.back_calculation and self._excess:
            i += self.back_calculation * self._excess * dt
        low, high = self.integral_limits
        i = low if i < low else high if i > high else i
        if self.on_measurement:
            sample = self.setpoint - error if measurement is None else measurement
            if not math.isfinite(sample):
                raise ValueError(f"measurement must be finite, got {sample}")
            change = None if self._previous is None else self._previous - sample
        else:
            sample = error
            change = None if self._previous is None else error - self._previous
        tau = self.tau
        if change is None:
            d = 0.0
        elif tau > 0.0:
            d = tau / (tau + dt) * self._d + self.kd * change / (tau + dt)
        elif dt == 0.0:
            d = 0.0
        else:
            d = self.kd * change / dt
        u = p + i + d
        if not math.isfinite(u):  # an overflow somewhere: keep every term finite
            p, d = _bounded(p), _bounded(d)
            i = min(high, max(low, _bounded(i)))
            u = p + i + d
        self._p, self._i, self._d, self._previous = p, i, d, sample
        low, high = self.output_limits
        out = low if u < low else high if u > high else u
        self._excess = out - u
        return out

    @property
    def components(self) -> tuple[float, float, float]:
        """The last (P, I, D) terms, before the output clamp."""
        return (self._p, self._i, self._d)

    @property
    def integral(self) -> float:
        """The I term: the accumulated ki·e·dt after leak and anti-windup."""
        return self._i

    @integral.setter
    def integral(self, value: float) -> None:
        low, high = self.integral_limits
        self._i = min(high, max(low, _bounded(value)))
