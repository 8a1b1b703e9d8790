"""A vectorised model of ``weather`` (the OPAR document's toy) for the batch engine.

N worlds in arrays; every rule mirrors ``environments.weather`` (the scalar task
stays the reference).  Actions are a code (``GET``: the goal's city, ``GET_OTHER``:
the wrong city, ``ADVISE``) and the advice (1: umbrella).  No wrapper is modelled.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from environments.weather import Weather, WeatherParams
from opar_sim.core.twin import Action, SimTaskTwin, take_rows, unwrapped
from opar_sim.core.types import Action as Action_

GET, GET_OTHER, ADVISE = range(3)
NO_ADVICE = -1
WRONG_CITY = "London"  # Weather.wrong_actions asks about this city


class WeatherBatch(SimTaskTwin):
    """N weather worlds advancing together."""

    plan_steps = 2  # len(Weather.plan_template())
    observation_tokens = 16

    def __init__(self, params: WeatherParams) -> None:
        """Hold the task's parameters; ``reset`` draws the worlds.

        Args:
            params: The scalar task's validated parameters.
        """
        self.params = params
        self.tools = params.tools
        # the wrong city is the goal's own when the goal names it (the lookup then informs)
        self.other_is_right = params.city.lower() == WRONG_CITY.lower()
        self.n = 0

    @classmethod
    def from_task(cls, task: Any) -> WeatherBatch:
        """The twin of a built, unwrapped ``Weather``.

        Args:
            task: The built task.

        Returns:
            Its twin.

        Raises:
            TwinUnsupported: If the task is wrapped or is not exactly ``Weather``.
        """
        inner = unwrapped(task, "weather", Weather)
        return cls(inner.params)

    def reset(self, n: int, rng: np.random.Generator) -> None:
        """Draw ``n`` worlds as ``Weather._reset_world`` does.

        Args:
            n: Episodes.
            rng: The batch's generator.
        """
        p = self.params
        self.n = n
        draws = rng.random((2, n))
        self.rain = draws[0] < p.rain_probability
        self.forecast = self.rain != (draws[1] < p.forecast_error)
        self.knowledge = np.zeros(n, bool)
        self.budget = np.full(n, p.budget, np.int32)
        self.advice = np.full(n, NO_ADVICE, np.int8)

    def world_changed(self) -> np.ndarray:
        """The weather's observation never reports a world change."""
        return np.zeros(self.n, bool)

    def _right(self) -> np.ndarray:
        return np.asarray((self.advice >= 0) & ((self.advice == 1) == self.rain))

    def progress(self) -> np.ndarray:
        """0.5 once the right city's forecast is read, 1.0 advised right."""
        return np.where(self._right(), 1.0, 0.5 * self.knowledge)

    def complete(self) -> np.ndarray:
        """Whether the advice given matches the true weather."""
        return self._right()

    def feasible(self) -> np.ndarray:
        """Budget left, or already advised right."""
        return np.asarray((self.budget > 0) | self._right())

    def visible_progress(self) -> np.ndarray:
        """``Weather.observe``'s visible progress: the agent trusts the forecast."""
        advised = self.advice >= 0
        trusted = np.where((self.advice == 1) == self.forecast, 1.0, 0.5)
        blind = np.where(advised, 0.75, 0.0)
        return np.where(self.knowledge, np.where(advised, trusted, 0.5), blind)

    def expert(self) -> Action:
        """Read the forecast, then advise what it says."""
        tool = np.where(self.knowledge, ADVISE, GET).astype(np.int8)
        return tool, self.forecast.astype(np.int8)

    def wrong(self, pick: np.ndarray, need: np.ndarray) -> Action:
        """Ask about the wrong city, or advise against the forecast (by ``pick``)."""
        tool = np.where(pick * 2 < 1, GET_OTHER, ADVISE).astype(np.int8)
        return tool, (~self.forecast).astype(np.int8)

    def action_key(self, action: Action) -> np.ndarray:
        """Each row's (tool, advice) as one small integer (``label`` reads it)."""
        tool, umbrella = action
        return np.asarray(tool.astype(np.int64) * 2 + umbrella)

    def label(self, key: int) -> tuple[str, str]:
        """The label and tool of ``Weather``'s call ``key`` names (``action_key``)."""
        tool, umbrella = divmod(key, 2)
        if tool == ADVISE:
            action = Action_.of("advise", umbrella=bool(umbrella))
        else:
            city = self.params.city if tool == GET else WRONG_CITY
            action = Action_.of("get_weather", city=city)
        return action.label(), action.tool

    def apply(self, mask: np.ndarray, action: Action) -> tuple[np.ndarray, np.ndarray]:
        """Run the delivered calls of the rows of ``mask`` (``Weather._apply``).

        Args:
            mask: The rows whose call arrived.
            action: Tool codes and the advice.

        Returns:
            (ok, result tokens) per row (zero outside ``mask``).
        """
        tool, umbrella = action
        spent = mask & (self.budget <= 0)
        run = mask & ~spent
        self.budget -= run
        informs = run & ((tool == GET) | ((tool == GET_OTHER) & self.other_is_right))
        self.knowledge |= informs
        advise = run & (tool == ADVISE)
        np.copyto(self.advice, umbrella, where=advise)
        tokens = np.where(advise, 8, 12) * run
        return run, tokens.astype(np.int64)

    def take(self, keep: np.ndarray) -> None:
        """Keep only the rows ``keep``, in order."""
        take_rows(self, keep, self.n)
        self.n = len(keep)

    def answer_fields(self) -> dict[str, np.ndarray]:
        """The advice of each row (-1: none)."""
        return {"advice": self.advice.copy()}

    def answers(self, fields: dict[str, np.ndarray]) -> list[str]:
        """``Weather.answer`` of each ended row."""
        words = {NO_ADVICE: "no advice yet", 0: "no umbrella needed", 1: "take an umbrella"}
        return [words[a] for a in fields["advice"].tolist()]
