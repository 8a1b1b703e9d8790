"""``bayes``: the Bayes decision on an approximate model of the loop (docs/bayes.md).

It is optimal for its model, not for the simulator: its difference to another law can be
negative.

The law plans with a small POMDP of the loop built from the spec's own parameters
(``model``), solves it once per parameter set by backward induction with point-based
backups at ``stages`` (``solve``), and looks each Reflect's decision up (``law``); the
chain at ``stages`` is fitted on flight_booking's tuning seed by ``fit``.
"""

from controllers.bayes.law import (
    AGENT_DEFAULTS,
    FAILED_ACT,
    FITTED,
    MODELLED_TASKS,
    TOOL_DEFAULTS,
    BayesReflector,
    describe_model,
    model_from,
)
from controllers.bayes.model import BayesModel, two_state
from controllers.bayes.solve import Solution, belief_grid, solution, solve

__all__ = [
    "AGENT_DEFAULTS",
    "FAILED_ACT",
    "FITTED",
    "MODELLED_TASKS",
    "TOOL_DEFAULTS",
    "BayesModel",
    "BayesReflector",
    "Solution",
    "belief_grid",
    "describe_model",
    "model_from",
    "solution",
    "solve",
    "two_state",
]
