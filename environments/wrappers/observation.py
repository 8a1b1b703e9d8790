"""Partial observability: noisy, delayed, dropped and truncated observations.

Each wrapper changes only what the agent sees; the hidden world, its progress
and the expert are those of the task beneath.
"""

from __future__ import annotations

from collections import deque

from pydantic import BaseModel, ConfigDict, Field

from environments.wrappers.base import TaskWrapper
from opar_sim.core.task import TaskEvent
from opar_sim.core.types import Action, ActionResult, Observation


class NoiseParams(BaseModel):
    """Parameters of the ``noise`` wrapper: σ of the noise on visible progress."""

    model_config = ConfigDict(extra="forbid")

    sigma: float = Field(0.1, ge=0, le=1, description="σ of the noise on reported progress")


class ObservationNoise(TaskWrapper):
    """Gaussian noise on the progress the agent can infer from what it sees.

    A fresh noise value is drawn after every tool call (the reading changes
    when the world is looked at again), so observing twice between two calls
    reads the same value, as a real report would.
    """

    wrapper_name = "noise"
    Params = NoiseParams
    params: NoiseParams

    def _on_reset(self) -> None:
        self._offset = self.params.sigma * float(self.rng.standard_normal())

    def execute(self, action: Action) -> TaskEvent:
        """Run the call, then draw the noise of the next reading."""
        result = yield from self.task.execute(action)
        self._offset = self.params.sigma * float(self.rng.standard_normal())
        return result

    def observe(self) -> Observation:
        """The inner observation with the current noise added to its visible progress."""
        obs = self.task.observe()
        seen = min(1.0, max(0.0, obs.visible_progress + self._offset))
        return Observation(obs.text, seen, obs.world_changed, obs.tokens)


class DelayParams(BaseModel):
    """Parameters of the ``delay`` wrapper: how many tool calls the observation lags."""

    model_config = ConfigDict(extra="forbid")

    steps: int = Field(1, ge=0, le=1000, description="tool calls the observation lags by (k)")


class DelayedObservation(TaskWrapper):
    """The agent sees the world ``steps`` tool calls late (a sensor with dead time).

    After every call the current observation joins a queue of length k + 1;
    the agent is shown its oldest entry.
    """

    wrapper_name = "delay"
    Params = DelayParams
    params: DelayParams

    def _on_reset(self) -> None:
        self._queue: deque[Observation] = deque(maxlen=self.params.steps + 1)
        self._queue.append(self.task.observe())

    def execute(self, action: Action) -> TaskEvent:
        """Run the call, then queue the observation it leaves behind."""
        result = yield from self.task.execute(action)
        self._queue.append(self.task.observe())
        return result

    def observe(self) -> Observation:
        """The observation of ``steps`` tool calls ago (the oldest in the queue)."""
        return self._queue[0]


class DropParams(BaseModel):
    """Parameters of the ``drop`` wrapper: how often results are lost or cut short."""

    model_config = ConfigDict(extra="forbid")

    drop_rate: float = Field(0.1, ge=0, le=1, description="chance a result is lost entirely")
    truncate_rate: float = Field(0.1, ge=0, le=1, description="chance a result is cut short")
    keep: float = Field(0.3, ge=0, le=1, description="fraction of a truncated result kept")


class DroppedResults(TaskWrapper):
    """Results lost or cut short on the way back; the call itself did take effect.

    A dropped result reaches the agent as a failure with no text (error
    ``dropped``); a truncated one keeps the first ``keep`` of its text and
    tokens (error ``truncated``, still ok).
    """

    wrapper_name = "drop"
    Params = DropParams
    params: DropParams

    def execute(self, action: Action) -> TaskEvent:
        """Run the call, then drop its result or truncate an ok one, by one draw."""
        result = yield from self.task.execute(action)
        p = self.params
        draw = float(self.rng.random())
        if draw < p.drop_rate:
            return ActionResult(False, "", result.latency, "dropped", 0)
        if draw < p.drop_rate + p.truncate_rate and result.ok:
            cut = int(len(result.text) * p.keep)
            tokens = int(result.tokens * p.keep)
            return ActionResult(True, result.text[:cut], result.latency, "truncated", tokens)
        return result
