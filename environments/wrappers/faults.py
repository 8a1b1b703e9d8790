"""Faults of the tools and of the world: failures, heavy-tailed latency, disturbances."""

from __future__ import annotations

import math
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from environments.wrappers.base import TaskWrapper, timed_call
from opar_sim.core.task import TaskEvent
from opar_sim.core.types import Action, ActionResult


class FailureParams(BaseModel):
    """Parameters of the ``failures`` wrapper: the injected failure rate and its latency."""

    model_config = ConfigDict(extra="forbid")

    rate: float = Field(0.1, ge=0, le=1, description="chance a call fails before reaching the tool")
    latency: float = Field(0.05, ge=0, description="seconds a failed call takes to report")


class ToolFailures(TaskWrapper):
    """Calls fail at ``rate`` before reaching the tool (no effect on the world)."""

    wrapper_name = "failures"
    Params = FailureParams
    params: FailureParams

    def execute(self, action: Action) -> TaskEvent:
        """Fail a known tool's call at ``rate`` after ``latency`` seconds; else run it."""
        p = self.params
        if action.tool in self.tools and float(self.rng.random()) < p.rate:
            if p.latency > 0:
                yield self.env.timeout(p.latency)
            return ActionResult(
                False, f"{action.tool} failed: injected fault", p.latency, "failure"
            )
        return (yield from self.task.execute(action))


class LatencyParams(BaseModel):
    """Parameters of the ``latency`` wrapper: the Lomax delay and the per-call timeout."""

    model_config = ConfigDict(extra="forbid")

    scale: float = Field(0.05, ge=0, description="scale of the extra Pareto (Lomax) delay, seconds")
    shape: float = Field(1.5, gt=0, description="tail index α: smaller is heavier (α ≤ 2: ∞ var)")
    timeout: float = Field(0.5, gt=0, description="per-call timeout, seconds (OPAR §2.3)")


class HeavyTailLatency(TaskWrapper):
    """Extra Lomax(α)-distributed delay per call, with a per-call timeout.

    The delay is ``scale · Lomax(shape)``: most calls get little, a few get a
    lot.  The wrapper waits at most ``timeout`` seconds in all (the inner
    tool's own latency included); past that the agent gets a timeout and the
    abandoned call may still take effect later.
    """

    wrapper_name = "latency"
    Params = LatencyParams
    params: LatencyParams

    def execute(self, action: Action) -> TaskEvent:
        """Run the call after a Lomax delay; abandon it at ``timeout`` unless the tool blocks."""
        p = self.params
        extra = p.scale * float(self.rng.pareto(p.shape))
        call = self.task.execute(action)
        spec = self.tools.get(action.tool)
        timeout = math.inf if spec is not None and spec.blocking else p.timeout
        return (yield from timed_call(self.env, call, action.tool, timeout, extra))


class DisturbanceParams(BaseModel):
    """Parameters of the ``disturbance`` wrapper: the rate of world changes."""

    model_config = ConfigDict(extra="forbid")

    rate: float = Field(
        0.02, ge=0, allow_inf_nan=False, description="disturbances per simulated second (Poisson)"
    )


class WorldDisturbance(TaskWrapper):
    """A world that changes under the agent: a Poisson process in simulated time.

    At each event the innermost task's ``disturb(rng)`` hook changes the
    world (a fare rises, a document disappears, a load step hits the plant,
    the forecast turns); the agent learns of it only through what it observes.
    ``changes`` counts the events that changed something.
    """

    wrapper_name = "disturbance"
    Params = DisturbanceParams
    params: DisturbanceParams

    def _on_reset(self) -> None:
        self.changes = 0
        if self.params.rate > 0:
            self.env.process(self._process())

    def _process(self) -> Any:
        rng = self.rng
        while True:
            yield self.env.timeout(float(rng.exponential(1.0 / self.params.rate)))
            if self.disturb(rng) is not None:
                self.changes += 1
