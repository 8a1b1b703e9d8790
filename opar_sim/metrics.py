"""The stable import path of the step-response metrics (docs/design.md §6).

``opar_sim.metrics.step_info`` is part of the contract; the metrics live in
``opar_sim.measure.metrics``.
"""

from opar_sim.measure.metrics import (
    EpisodeResponse,
    EstimateGap,
    StepInfo,
    episode_response,
    error_integrals,
    estimate_gap,
    step_info,
)

__all__ = [
    "EpisodeResponse",
    "EstimateGap",
    "StepInfo",
    "episode_response",
    "error_integrals",
    "estimate_gap",
    "step_info",
]
