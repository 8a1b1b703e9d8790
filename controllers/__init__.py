"""Reflect decision laws for opar-sim.

``controllers.make(name, **params)`` builds a registered controller.  Every
controller follows the ``Controller`` protocol: ``reset()`` and
``decide(evaluation, ctx) -> Decision``; ``check_controller`` checks it.
"""

from controllers.bang_bang import BangBang
from controllers.bayes import BayesReflector
from controllers.checker import ControllerCheckError, check_controller
from controllers.confidence import ConfidenceReflector
from controllers.discrete_pid import DiscretePID
from controllers.fixed_interval import FixedInterval
from controllers.open_loop import OpenLoop
from controllers.oracle import Oracle
from controllers.pid import CognitivePID
from controllers.registry import describe, make, names, register
from controllers.sprt import SPRTReflector
from controllers.stall_counter import StallCounter
from controllers.threshold import ThresholdReflector
from opar_sim.core.controller import Controller, ReflectContext, Truth, TruthProbe, TruthReader

register("pid", CognitivePID)
register("threshold", ThresholdReflector)
register("confidence", ConfidenceReflector)
register("open_loop", OpenLoop)
register("fixed_interval", FixedInterval)
register("stall_counter", StallCounter)
register("oracle", Oracle)
register("bang_bang", BangBang)
register("bayes", BayesReflector)
register("sprt", SPRTReflector)

__all__ = [
    "BangBang",
    "BayesReflector",
    "CognitivePID",
    "ConfidenceReflector",
    "Controller",
    "ControllerCheckError",
    "DiscretePID",
    "FixedInterval",
    "OpenLoop",
    "Oracle",
    "ReflectContext",
    "SPRTReflector",
    "StallCounter",
    "ThresholdReflector",
    "Truth",
    "TruthProbe",
    "TruthReader",
    "check_controller",
    "describe",
    "make",
    "names",
    "register",
]
