"""What every batch law shares: the signal codes, the reading of N episodes, the protocol."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

CONTINUE, REPLAN, TERMINATE = 0, 1, 2

Signals = tuple[np.ndarray, np.ndarray]  # (signal codes, give-up claims)


class Unsupported(ValueError):
    """A law (or an option of one) that has no batch twin."""


@dataclass(slots=True)
class Reading:
    """One Reflect of N episodes: the evaluation and the loop's context, as arrays."""

    delta_task: np.ndarray
    delta_act: np.ndarray
    delta_plan: np.ndarray
    confidence: np.ndarray
    dt: np.ndarray
    plan_age: np.ndarray
    plan_exhausted: np.ndarray
    replans: np.ndarray
    # what the evaluation names as missing (the simulated agent: anything below 0.999)
    missing: np.ndarray | None = None
    # the hidden state, for the laws that read it (the oracle's truth probe)
    complete: np.ndarray | None = None
    feasible: np.ndarray | None = None
    quality: np.ndarray | None = None  # the plan's effective quality now
    # the loop's step number and every episode's clock (ReflectContext.step and .now), for
    # the laws run row by row through their scalar reference
    step: int = 0
    now: np.ndarray | None = None


class BatchLaw(Protocol):
    """A Reflect law over N episodes."""

    name: str

    def reset(self, n: int) -> None:
        """Start ``n`` episodes."""
        ...

    def decide(self, mask: np.ndarray, r: Reading) -> Signals:
        """The signals of the rows of ``mask`` (others: finished; signals and state unspecified)."""
        ...


def _codes(term: np.ndarray, replan: np.ndarray) -> np.ndarray:
    return np.where(term, TERMINATE, np.where(replan, REPLAN, CONTINUE)).astype(np.int8)
