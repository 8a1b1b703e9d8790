"""Streaming per-controller statistics of a run: what summary.json holds."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


def wilson_interval(successes: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """The Wilson score interval for a binomial proportion (95 % by default)."""
    if n <= 0:
        return (0.0, 1.0)
    phat = successes / n
    denom = 1 + z * z / n
    centre = (phat + z * z / (2 * n)) / denom
    half = z * math.sqrt(phat * (1 - phat) / n + z * z / (4 * n * n)) / denom
    # clamp to [0, 1] and around p̂ itself, which rounding can push just outside
    return (min(phat, max(0.0, centre - half)), max(phat, min(1.0, centre + half)))


@dataclass
class ControllerStats:
    """Running totals for one controller; memory does not grow with episodes."""

    episodes: int = 0
    successes: int = 0
    steps: int = 0
    tokens: int = 0
    sim_seconds: float = 0.0
    replans: int = 0
    tool_calls: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)

    def add_row(self, row: Mapping[str, Any]) -> None:
        """Count one episodes.jsonl row."""
        self.episodes += 1
        self.successes += bool(row["success"])
        self.steps += int(row["steps"])
        self.tokens += int(row["tokens"])
        self.sim_seconds += float(row["sim_seconds"])
        self.replans += int(row["replans"])
        self.tool_calls += int(row["tool_calls"])
        self.outcomes[str(row["outcome"])] += 1

    def as_dict(self) -> dict[str, Any]:
        n = max(self.episodes, 1)
        lo, hi = wilson_interval(self.successes, self.episodes)
        return {
            "episodes": self.episodes,
            "success_rate": self.successes / n,
            "success_ci95": [lo, hi],
            "mean_steps": self.steps / n,
            "mean_tokens": self.tokens / n,
            "mean_sim_seconds": self.sim_seconds / n,
            "mean_replans": self.replans / n,
            "mean_tool_calls": self.tool_calls / n,
            "outcomes": dict(sorted(self.outcomes.items())),
        }


class Summary:
    """Per-controller statistics, keyed by controller name."""

    def __init__(self) -> None:
        self.by_controller: dict[str, ControllerStats] = {}

    def add_row(self, row: Mapping[str, Any]) -> None:
        """Count one episodes.jsonl row under its controller."""
        stats = self.by_controller.setdefault(str(row["controller"]), ControllerStats())
        stats.add_row(row)

    def as_dict(self) -> dict[str, dict[str, Any]]:
        return {name: s.as_dict() for name, s in self.by_controller.items()}
