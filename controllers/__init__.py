"""Reflect decision laws for opar-sim.

``controllers.make(name, **params)`` builds a registered controller.  Every
controller follows the ``Controller`` protocol: ``reset()`` and
``decide(evaluation, ctx) -> Decision``.
"""

from controllers.base import Controller, ReflectContext, Truth
from controllers.pid import CognitivePID
from controllers.registry import describe, make, names, register
from controllers.threshold import ThresholdReflector

register("pid", CognitivePID)
register("threshold", ThresholdReflector)

__all__ = [
    "CognitivePID",
    "Controller",
    "ReflectContext",
    "ThresholdReflector",
    "Truth",
    "describe",
    "make",
    "names",
    "register",
]
