"""A stop with a guaranteed error rate: stopping as two sequential tests on the evaluations.

Two questions decide a TERMINATE, and each is a sequential test on the
stream of evaluations (see docs/sprt.md):

* **done** (TERMINATE claiming completion) tests "complete" against "not
  complete" on δ_task.  Completion is a change that happens once, so the
  statistic is Page's CUSUM of the per-reading log-likelihood ratios (Wald's
  SPRT restarted whenever its evidence falls to 0): ``C_t = max(0, C_{t-1} +
  ℓ_done(δ_task_t))``.  TERMINATE (done) when ``C_t > done_boundary``; the
  rate of false completions is ``alpha``.
* **give up** (TERMINATE giving up) tests "infeasible" against "feasible" on
  δ_act, the agent's verdict on its last step (failed, no progress,
  progress), which holds no confidence bias.  Feasibility does not change, so
  the statistic is Wald's cumulative log-likelihood ratio ``S_t = S_{t-1} +
  ℓ_abandon(δ_act_t)``.  Give up when ``S_t > abandon_boundary``; the rate of
  false abandons (giving up on a feasible task) is ``beta``.

The likelihood ratios are tables of binned frequencies fitted on tuning
episodes (``opar_sim.studies.sprt.calibrate``); the δ_act table is
conditioned on the number of productive steps so far (a Markov summary of the
history, since an infeasible world allows only a few).  With an exact model
the likelihood ratio is a nonnegative martingale under the null and Ville's
inequality makes ``log(1/β)`` an anytime-valid boundary (the default when no
calibrated boundary is given).  The steps of one episode are not independent
given feasibility (a bad plan makes no-progress steps persist), so the
calibrated boundaries are instead the smallest whose exceedance share on the
tuning episodes has a 95 % Clopper–Pearson upper bound at most the rate asked
for, fitted on episodes the tables never saw.  The defaults are
flight_booking's with ``infeasible_rate = 0.3`` and 20 steps (tuning seed 100:
tables on episodes 0..1999, boundaries on 2000..3999; never the evaluation
seeds), α = β = 0.05.  On another task or agent, or past those 20 steps, the
law runs and says so (``cautions``): its error rates are not guaranteed there.

Between stops it replans like Algorithm 2's threshold law: δ_plan >
``threshold_drift`` or δ_act < ``threshold_valid``.  Neither rule reads the
boundaries, so a run with a boundary at infinity is the same trajectory as
the real run up to its stop (common random numbers): the calibration reads
it and the guarantee holds for whatever prefix the real run keeps.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import ClassVar

from controllers.base import require_unit
from opar_sim.core.controller import ModelInfo, ReflectContext
from opar_sim.core.types import ControlSignal, Decision, Evaluation

DONE_BINS = 11  # δ_task bins of width 0.1 on [0, 1), and a reading of 1.0 (clipped) alone
ACT_EDGES = (0.35, 0.8)  # δ_act: failed < 0.35 ≤ no progress < 0.8 ≤ progress
N_ACT = len(ACT_EDGES) + 1
PRODUCTIVE_CAP = 4  # the δ_act table is conditioned on min(productive steps so far, 4)
# Fitted on flight_booking (infeasible_rate 0.3, 20 steps), tuning seed 100, by
# ``opar_sim.studies.sprt_calibration.calibrate`` with 4,000 episodes (alpha = beta = 0.05):
# the tables on episodes 0..1999, the boundaries on 2000..3999.
DONE_LLR: tuple[float, ...] = (
    -6.9322,
    -7.0941,
    -7.4393,
    -7.6111,
    -6.8075,
    -4.806,
    -2.4565,
    -0.7261,
    1.1897,
    2.9833,
    4.4362,
)
ABANDON_LLR: tuple[float, ...] = (
    -0.358,
    -0.109,
    0.0118,
    1.1725,
    1.2757,
    0.007,
    0.9497,
    1.4555,
    -0.0519,
    0.6581,
    1.0574,
    -0.3114,
    -1.4398,
    -0.9577,
    -0.996,
)
DONE_BOUNDARY: float | None = 5.625900000000001
ABANDON_BOUNDARY: float | None = 11.156099999999999

# Boundaries recalibrated at each (alpha, beta) of RATES from the same 2,000 boundary episodes of
# flight_booking_infeasible (seed TUNING_SEED; studies.sprt_calibration.calibrate(grid=RATES)):
# the give-up boundary depends on beta alone; the done boundary on both (it is fitted on the steps
# before the give-up stop).  (0.05, 0.05) gives the shipped DONE_BOUNDARY and ABANDON_BOUNDARY.
RATES: tuple[float, ...] = (0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3)
ABANDON_AT: dict[float, float] = {
    0.005: 19.127000000000006,
    0.01: 17.2786,
    0.02: 14.664899999999994,
    0.05: 11.156099999999999,
    0.1: 8.0932,
    0.2: 5.7257,
    0.3: 4.633100000000001,
}
DONE_AT: dict[tuple[float, float], float] = {
    (0.005, 0.005): 44.0217,
    (0.01, 0.005): 18.6713,
    (0.02, 0.005): 10.790000000000001,
    (0.05, 0.005): 5.8263,
    (0.1, 0.005): 2.9833,
    (0.2, 0.005): 1.1897,
    (0.3, 0.005): 0.0,
    (0.005, 0.01): 44.0217,
    (0.01, 0.01): 18.6713,
    (0.02, 0.01): 10.790000000000001,
    (0.05, 0.01): 5.8263,
    (0.1, 0.01): 2.9833,
    (0.2, 0.01): 1.1897,
    (0.3, 0.01): 0.0,
    (0.005, 0.02): 44.0217,
    (0.01, 0.02): 18.6713,
    (0.02, 0.02): 10.4028,
    (0.05, 0.02): 5.625900000000001,
    (0.1, 0.02): 2.9833,
    (0.2, 0.02): 1.1897,
    (0.3, 0.02): 0.0,
    (0.005, 0.05): 44.0217,
    (0.01, 0.05): 17.4816,
    (0.02, 0.05): 10.4028,
    (0.05, 0.05): 5.625900000000001,
    (0.1, 0.05): 2.9833,
    (0.2, 0.05): 1.1897,
    (0.3, 0.05): 0.0,
    (0.005, 0.1): 44.0217,
    (0.01, 0.1): 17.4816,
    (0.02, 0.1): 10.4028,
    (0.05, 0.1): 5.625900000000001,
    (0.1, 0.1): 2.9833,
    (0.2, 0.1): 1.1897,
    (0.3, 0.1): 0.0,
    (0.005, 0.2): 44.0217,
    (0.01, 0.2): 14.4983,
    (0.02, 0.2): 10.062100000000001,
    (0.05, 0.2): 5.3627,
    (0.1, 0.2): 2.9833,
    (0.2, 0.2): 1.1897,
    (0.3, 0.2): 0.0,
    (0.005, 0.3): 44.0217,
    (0.01, 0.3): 13.4449,
    (0.02, 0.3): 9.413499999999999,
    (0.05, 0.3): 4.4362,
    (0.1, 0.3): 2.3794,
    (0.2, 0.3): 0.0,
    (0.3, 0.3): 0.0,
}


# Where the shipped tables and boundaries were fitted: the task (with the simulated agent) and
# the step limit of those episodes.  Past that horizon the boundaries' error rates are not
# guaranteed (the statistics keep accumulating on steps the calibration never saw).
CALIBRATED_TASK = "flight_booking"
CALIBRATED_HORIZON = 20


def calibrated_boundaries(alpha: float, beta: float) -> tuple[float, float]:
    """The (done, give-up) boundaries calibrated for error rates ``alpha`` and ``beta``.

    A rate between the grid's points takes the boundary of the largest grid rate below it
    (a stricter boundary: its error rate stays at most the one asked for); at
    (0.05, 0.05) they are the shipped ``DONE_BOUNDARY`` and ``ABANDON_BOUNDARY``.

    Raises:
        ValueError: a rate below the grid's smallest (0.005): not calibrated there.
    """
    if min(alpha, beta) < RATES[0]:
        raise ValueError(
            f"sprt: alpha and beta below {RATES[0]} are not calibrated (got {alpha}, {beta}); "
            "run `opar-sim sprt SPEC --alpha A --beta B` and pass its boundaries"
        )
    a = max(r for r in RATES if r <= alpha + 1e-12)
    b = max(r for r in RATES if r <= beta + 1e-12)
    return DONE_AT[(a, b)], ABANDON_AT[b]


def done_bin(delta_task: float) -> int:
    """The δ_task bin: 0 for [0, 0.1), …, 9 for [0.9, 1), 10 for a reading of 1.0."""
    if delta_task >= 0.999:
        return DONE_BINS - 1
    return min(DONE_BINS - 2, max(0, int(delta_task * 10)))


def act_bin(delta_act: float) -> int:
    """The δ_act category: 0 failed, 1 no progress, 2 progress."""
    return sum(delta_act >= edge for edge in ACT_EDGES)


def abandon_cell(productive: int, delta_act: float) -> int:
    """The δ_act table's cell: (min(productive steps before this one, cap), category)."""
    return min(productive, PRODUCTIVE_CAP) * N_ACT + act_bin(delta_act)


class SPRTReflector:
    """Two sequential tests: δ_task CUSUM → done at rate α; δ_act SPRT → give up at rate β.

    Parameters: the error rates ``alpha`` and ``beta``; the likelihood tables
    ``done_llr`` and ``abandon_llr``; the calibrated ``done_boundary`` and
    ``abandon_boundary``; the REPLAN rule's ``threshold_drift`` and
    ``threshold_valid``; where the tables were fitted, ``calibrated_task`` and
    ``calibrated_horizon`` (a run outside them prints a caution).
    """

    name = "sprt"

    # the tunable space (searched by ``opar-sim shootout``): the error rates
    SPACE: ClassVar[dict[str, tuple[float, float]]] = {
        "alpha": (0.005, 0.3),
        "beta": (0.005, 0.3),
    }

    def __init__(
        self,
        alpha: float = 0.05,
        beta: float = 0.05,
        done_llr: Sequence[float] = DONE_LLR,
        abandon_llr: Sequence[float] = ABANDON_LLR,
        done_boundary: float | None = DONE_BOUNDARY,
        abandon_boundary: float | None = ABANDON_BOUNDARY,
        threshold_drift: float = 0.6,
        threshold_valid: float = 0.3,
        calibrated_task: str | None = CALIBRATED_TASK,
        calibrated_horizon: int | None = CALIBRATED_HORIZON,
    ) -> None:
        """Build the law.

        Args:
            alpha: The false-completion rate asked for, in (0, 1).
            beta: The false-abandon rate asked for, in (0, 1).
            done_llr: log p(bin | complete) − log p(bin | not complete), one per δ_task bin.
            abandon_llr: log p(cat | n, infeasible) − log p(cat | n, feasible), per
                δ_act category and count n of productive steps before (``abandon_cell``).
            done_boundary: The done boundary; left at its default (with ``abandon_boundary``)
                it is the one calibrated for ``alpha`` and ``beta`` (``calibrated_boundaries``);
                None: Ville's ``log(1/alpha)``
                (valid only for an exact model).  ``inf``: never done.
            abandon_boundary: The calibrated give-up boundary; None: ``log(1/beta)``.
                ``inf``: never give up.
            threshold_drift: δ_plan above which to REPLAN.
            threshold_valid: δ_act below which to REPLAN.
            calibrated_task: The task the tables and boundaries were fitted on (None:
                unknown); on another task the law runs with a caution (``cautions``).
            calibrated_horizon: The step limit of the calibration episodes (None: unknown);
                past it the error rates are not guaranteed, and the law says so.
        """
        if not (0.0 < alpha < 1.0 and 0.0 < beta < 1.0):
            raise ValueError(f"alpha and beta must be in (0, 1), got {alpha}, {beta}")
        if len(done_llr) != DONE_BINS:
            raise ValueError(f"done_llr needs {DONE_BINS} values, got {len(done_llr)}")
        if len(abandon_llr) != len(ABANDON_LLR):
            raise ValueError(f"abandon_llr needs {len(ABANDON_LLR)} values, got {len(abandon_llr)}")
        require_unit(threshold_drift=threshold_drift, threshold_valid=threshold_valid)
        if calibrated_horizon is not None and calibrated_horizon < 1:
            raise ValueError(f"calibrated_horizon must be >= 1, got {calibrated_horizon}")
        self.calibrated_task = calibrated_task
        self.calibrated_horizon = calibrated_horizon
        self.alpha = alpha
        self.beta = beta
        self.done_llr = tuple(float(x) for x in done_llr)
        self.abandon_llr = tuple(float(x) for x in abandon_llr)
        if done_boundary == DONE_BOUNDARY and abandon_boundary == ABANDON_BOUNDARY:
            # the calibrated defaults: the boundaries calibrated for these error rates
            done_boundary, abandon_boundary = calibrated_boundaries(alpha, beta)
        self.done_at = math.log(1.0 / alpha) if done_boundary is None else done_boundary
        self.abandon_at = math.log(1.0 / beta) if abandon_boundary is None else abandon_boundary
        self.threshold_drift = threshold_drift
        self.threshold_valid = threshold_valid
        self.reset()

    def cautions(self, model: ModelInfo) -> list[str]:
        """Where this run leaves the calibration: another task or agent, a longer horizon."""
        out = []
        if self.calibrated_task is not None and model.task != self.calibrated_task:
            out.append(
                f"not calibrated for this task: its tables and boundaries were fitted on "
                f"{self.calibrated_task}, not {model.task}, so alpha and beta are not its "
                "error rates here; calibrate it with `opar-sim sprt SPEC`"
            )
        elif model.agent_kind != "simulated":
            out.append(
                f"not calibrated for this agent: its tables were fitted on the simulated agent's "
                f"evaluations, not {model.agent_kind}'s; calibrate it with `opar-sim sprt SPEC`"
            )
        if self.calibrated_horizon is not None and model.max_steps > self.calibrated_horizon:
            out.append(
                f"max_steps {model.max_steps} is past the horizon its boundaries were calibrated "
                f"on ({self.calibrated_horizon} steps): the false-completion and false-abandon "
                "rates can exceed alpha and beta there"
            )
        return out

    def reset(self) -> None:
        """Both statistics back to 0."""
        self._done = 0.0
        self._abandon = 0.0
        self._productive = 0

    def decide(self, evaluation: Evaluation, ctx: ReflectContext) -> Decision:
        """Update both statistics; TERMINATE (done or give up), REPLAN or CONTINUE.

        Args:
            evaluation: The agent's self-assessment; δ_task, δ_act and δ_plan are read.
            ctx: Ignored: the law keeps its own statistics.

        Returns:
            The decision, with terms ``done_llr`` (C_t) and ``abandon_llr`` (S_t).
        """
        self._done = max(0.0, self._done + self.done_llr[done_bin(evaluation.delta_task)])
        self._abandon += self.abandon_llr[abandon_cell(self._productive, evaluation.delta_act)]
        self._productive += act_bin(evaluation.delta_act) == N_ACT - 1
        terms = {"done_llr": self._done, "abandon_llr": self._abandon}
        if self._done > self.done_at:
            return Decision(ControlSignal.TERMINATE, "done: CUSUM past its boundary", terms)
        if self._abandon > self.abandon_at:
            return Decision(
                ControlSignal.TERMINATE, "give up: SPRT past its boundary", terms, give_up=True
            )
        if evaluation.delta_plan > self.threshold_drift:
            return Decision(ControlSignal.REPLAN, "plan drifted: δ_plan > threshold", terms)
        if evaluation.delta_act < self.threshold_valid:
            return Decision(ControlSignal.REPLAN, "action ineffective: δ_act < threshold", terms)
        return Decision(ControlSignal.CONTINUE, "evidence inside both boundaries", terms)
