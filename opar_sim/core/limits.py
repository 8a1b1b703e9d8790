"""The hard limits of an episode: they hold whatever the controller or a guard says."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Limits:
    """Hard limits of an episode (Algorithm 1's T_max, and the production budgets)."""

    max_steps: int = 20
    time_budget: float = 600.0  # simulated seconds
    token_budget: int = 200_000

    def __post_init__(self) -> None:
        if self.max_steps < 1:
            raise ValueError("max_steps must be >= 1")
        if not self.time_budget > 0:
            raise ValueError("time_budget must be > 0")
        if self.token_budget < 1:
            raise ValueError("token_budget must be >= 1")
