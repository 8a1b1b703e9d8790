"""Which scalar law has which array twin, and ``from_scalar``: a built law's batch twin."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from controllers.bang_bang import BangBang
from controllers.batch.laws import (
    BatchBangBang,
    BatchConfidence,
    BatchFixedInterval,
    BatchOpenLoop,
    BatchOracle,
    BatchSPRT,
    BatchStallCounter,
    BatchThreshold,
)
from controllers.batch.pid import BatchPID
from controllers.batch.protocol import BatchLaw, Unsupported
from controllers.batch.scalar import ScalarRows
from controllers.confidence import ConfidenceReflector
from controllers.fixed_interval import FixedInterval
from controllers.open_loop import OpenLoop
from controllers.oracle import Oracle
from controllers.pid import CognitivePID
from controllers.sprt import SPRTReflector
from controllers.stall_counter import StallCounter
from controllers.threshold import ThresholdReflector
from opar_sim.core.controller import Controller, TruthReader

TWINS: dict[type, Any] = {
    CognitivePID: BatchPID,
    ThresholdReflector: BatchThreshold,
    StallCounter: BatchStallCounter,
    FixedInterval: BatchFixedInterval,
    BangBang: BatchBangBang,
    OpenLoop: BatchOpenLoop,
    ConfidenceReflector: BatchConfidence,
    SPRTReflector: BatchSPRT,
    Oracle: BatchOracle,
}


def from_scalar(law: object, make: Callable[[], Controller] | None = None) -> BatchLaw:
    """The batch twin of a built scalar law, with its parameters.

    Args:
        law: A built controller.  One of the classes in ``TWINS`` (exactly: a subclass may
            change the law) gets its array twin; any other runs row by row through its
            scalar reference (``ScalarRows``) when ``make`` is given.
        make: Builds further instances of ``law`` (the build's controller factory); None
            allows only array twins.

    Returns:
        The twin, to ``reset(n)`` before use.

    Raises:
        Unsupported: If the law has no array twin and either no ``make`` was given or it
            reads the hidden state (the engine gives the truth only to array twins).
    """
    twin = TWINS.get(type(law))
    if twin is None:
        label = repr(getattr(law, "name", type(law).__name__))
        if make is None:
            names = ", ".join(sorted(str(getattr(c, "name", c.__name__)) for c in TWINS))
            raise Unsupported(f"controller {label} has no batch twin (arrays: {names})")
        if isinstance(law, TruthReader):
            raise Unsupported(f"controller {label} reads the hidden state and has no batch twin")
        rows: BatchLaw = ScalarRows(make, law)  # type: ignore[arg-type]
        return rows
    if isinstance(law, CognitivePID) and not math.isfinite(law.setpoint):
        raise Unsupported("a non-finite set-point")
    result: BatchLaw = twin(law)
    return result
