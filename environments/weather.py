"""The toy task of the OPAR document (§3.1): look up the weather, advise on an umbrella.

Goal
    Answer "Paris weather: should I take an umbrella?" correctly.
Tools
    ``get_weather(city)`` returns the forecast for a city; ``advise(umbrella)``
    gives the final advice.  Every call spends one unit of the budget.
Observation
    The state vector s_t = [k_t, b_t] of the document: knowledge (0, or 1 once
    the forecast for the right city has been read) and the remaining budget.
    The forecast itself is noisy: with ``forecast_error`` it is wrong.
Progress
    0.5 for knowing the forecast of the right city, 1.0 once the advice
    matches the true weather.
Termination
    Complete when the advice is right.  Calls with the budget spent are refused;
    the task is then infeasible unless already complete (stopping is giving up).
Faults
    Tool latency, failures and timeouts from ``tools``; a wrong forecast;
    under the ``disturbance`` wrapper the weather turns (once), leaving the
    forecast read so far stale.
Version history
    v0: first version.
    v1: ``disturb`` hook (the weather turns once); infeasible once the budget
    is spent without the right advice (was: feasible, so stopping counted as
    premature).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from environments.base import SimTask, ToolParams
from opar_sim.core.task import ToolSpec
from opar_sim.core.types import Action, ActionResult, Observation, PlanStep


class WeatherParams(BaseModel):
    """Parameters of ``weather``: the city, the call budget, the rain and forecast odds."""

    model_config = ConfigDict(extra="forbid")

    city: str = "Paris"
    budget: int = Field(5, ge=1, description="tool calls allowed (b_0)")
    rain_probability: float = Field(0.4, ge=0, le=1)
    forecast_error: float = Field(0.0, ge=0, le=1, description="chance the forecast is wrong")
    tools: ToolParams = ToolParams(latency_median=0.2, timeout=1.0, failure_rate=0.02)


# Tool argument schemas carry no docstring: pydantic would put it in the JSON schema
# sent to the LLM (its "description"), changing the constrained output format.
class GetWeatherArgs(BaseModel):  # noqa: D101
    model_config = ConfigDict(extra="forbid")
    city: str


class AdviseArgs(BaseModel):  # noqa: D101
    model_config = ConfigDict(extra="forbid")
    umbrella: bool


class Weather(SimTask):
    """Look up the weather, then advise on an umbrella (the OPAR document's toy)."""

    name = "weather"
    Params = WeatherParams
    TOOLS = (
        ToolSpec("get_weather", "Read the forecast for a city", GetWeatherArgs),
        ToolSpec("advise", "Give the final umbrella advice", AdviseArgs),
    )
    params: WeatherParams

    def __init__(self, **params: object) -> None:
        super().__init__(**params)
        self.goal = f"{self.params.city} weather: should I take an umbrella?"
        self._reset_state()

    def _reset_state(self) -> None:
        self.rain = False
        self.forecast_rain = False
        self.knowledge = 0
        self.budget = self.params.budget
        self.advice: bool | None = None
        self.stale = False  # the forecast read has changed since
        self.turned = False

    def _reset_world(self) -> None:
        self._reset_state()
        self.rain = bool(self.rng.random() < self.params.rain_probability)
        wrong = bool(self.rng.random() < self.params.forecast_error)
        self.forecast_rain = self.rain != wrong

    def _apply(self, action: Action) -> ActionResult:
        if self.budget <= 0:
            return ActionResult(False, "budget exhausted", 0.0, "rejected")
        self.budget -= 1
        if action.tool == "get_weather":
            city = str(action.arg("city"))
            if city.lower() != self.params.city.lower():
                return ActionResult(True, f"{city}: cloudy, 15°C", 0.0, tokens=12)
            self.knowledge = 1
            self.stale = False
            sky = "rain, 14°C" if self.forecast_rain else "sunny, 22°C"
            return ActionResult(True, f"{city}: {sky}", 0.0, tokens=12)
        self.advice = bool(action.arg("umbrella"))
        text = "take an umbrella" if self.advice else "no umbrella needed"
        return ActionResult(True, text, 0.0, tokens=8)

    def observe(self) -> Observation:
        """The state vector s_t = [k_t, b_t]; visible progress trusts the (maybe wrong) forecast."""
        visible = 0.5 * self.knowledge
        if self.advice is not None and self.knowledge:
            visible = 1.0 if self.advice == self.forecast_rain else 0.5
        elif self.advice is not None:
            visible = 0.75  # advice given blind: the agent cannot tell if it is right
        text = f"s=[k={self.knowledge}, b={self.budget}]"
        return Observation(text, visible, tokens=16)

    @property
    def progress(self) -> float:
        """Ground-truth progress: 0.5 once the right city's forecast is read, 1.0 advised right."""
        if self.advice is not None and self.advice == self.rain:
            return 1.0
        return 0.5 * self.knowledge

    @property
    def complete(self) -> bool:
        """Whether the advice given matches the true weather."""
        return self.advice is not None and self.advice == self.rain

    @property
    def feasible(self) -> bool:
        """Once the budget is spent without the right advice, nothing can complete the task."""
        return self.budget > 0 or self.complete

    def disturb(self, rng: np.random.Generator) -> str | None:
        """The weather turns, once per episode: the forecast read so far is stale."""
        if self.turned:
            return None
        self.turned = True
        self.rain = not self.rain
        self.forecast_rain = not self.forecast_rain
        self.stale = bool(self.knowledge)
        return "the weather turned"

    def expert_action(self) -> Action:
        """Read the forecast (again, if it went stale), then advise what it says."""
        if not self.knowledge or self.stale:
            return Action.of("get_weather", city=self.params.city)
        return Action.of("advise", umbrella=self.forecast_rain)

    def wrong_actions(self) -> Sequence[Action]:
        """Ask about the wrong city, or advise against the forecast."""
        return (
            Action.of("get_weather", city="London"),
            Action.of("advise", umbrella=not self.forecast_rain),
        )

    def plan_template(self) -> tuple[PlanStep, ...]:
        """Look up the city's weather, then advise."""
        return (
            PlanStep("get_weather", f"search the weather in {self.params.city}"),
            PlanStep("advise", "summarise: umbrella or not"),
        )

    def answer(self) -> str:
        """The umbrella advice given, or "no advice yet"."""
        if self.advice is None:
            return "no advice yet"
        return "take an umbrella" if self.advice else "no umbrella needed"
