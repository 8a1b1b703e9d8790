"""The law: the belief update of each Reflect and the decision of highest value.

``BayesReflector`` tracks the belief on the model (observed counts below ``stages``,
a point of the simplex over the hidden states at it) and looks the decision up in
the model's solution (``controllers.bayes.solve``); ``model_from`` builds the model of
a spec.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict
from typing import Any, ClassVar

import numpy as np

from controllers.base import require_unit
from controllers.bayes.model import FITTED_KAPPA, FITTED_PRODUCTIVE, BayesModel
from controllers.bayes.solve import Solution, entry_prior, solution, tables, value_at
from opar_sim.core.controller import ModelInfo, ReflectContext
from opar_sim.core.types import ControlSignal, Decision, Evaluation

MODELLED_TASKS = ("flight_booking",)  # the tasks whose structure the model describes

# the simulated agent's defaults (opar_sim.agents.simulated.SimulatedAgentParams), used
# when no model is bound; a test checks they are the agent's
AGENT_DEFAULTS: dict[str, float] = {
    "plan_alpha": 1.2,
    "plan_beta": 1.2,
    "critique_gain": 0.2,
    "critique_tolerance": 0.15,
    "bias": 0.05,
    "noise": 0.1,
    "context_knee": 2500,
    "context_decay": 0.5,
    "quality_floor": 0.05,
    "system_tokens": 300,
    "plan_tokens": 250,
    "continue_tokens": 30,
    "act_tokens": 40,
    "eval_tokens": 90,
}
TOOL_DEFAULTS: dict[str, float] = {
    "latency_median": 0.3,
    "latency_sigma": 0.6,
    "timeout": 2.0,
    "failure_rate": 0.05,
}
# flight_booking's world draws (environments/flight_booking.py, ``_reset_world``; a test
# checks them against the task): fares U(0.55, 1.6)·max_price, departures 5..22 h
FARE_RANGE = (0.55, 1.6)
HOUR_RANGE = (5, 22)
FAILED_ACT = 0.35  # δ_act below this: the step failed (the agent reads 0.1 for a failure)
EPS = 1e-12


def p_feasible(task_params: Mapping[str, Any]) -> float:
    """P(a flight_booking world has a valid flight when it is drawn).

    Each of ``n_flights`` flights is valid when its fare is under ``max_price`` and
    it departs at ``earliest_hour`` or later; an ``infeasible_rate`` share of worlds
    is made infeasible on purpose.  (Fares that rise during the episode can make a
    feasible world infeasible later: not counted here.)

    Args:
        task_params: The task's parameters (defaults: flight_booking's).

    Returns:
        (1 − infeasible_rate) · (1 − (1 − p_valid)^n_flights).
    """
    n = int(task_params.get("n_flights", 12))
    earliest = int(task_params.get("earliest_hour", 9))
    low, high = FARE_RANGE
    p_fare = min(1.0, max(0.0, (1.0 - low) / (high - low)))
    first, last = HOUR_RANGE
    p_hour = min(1.0, max(0.0, (last - max(earliest, first) + 1) / (last - first + 1)))
    rate = float(task_params.get("infeasible_rate", 0.0))
    return (1.0 - rate) * (1.0 - (1.0 - p_fare * p_hour) ** n)


def model_from(info: ModelInfo | None, overrides: Mapping[str, Any]) -> BayesModel:
    """The model of a spec: its agent's knobs, tool faults, limits and objective.

    Args:
        info: The spec's model parameters (None: the simulated agent's defaults
            on flight_booking's limits).
        overrides: The law's own parameters (task structure, discretisation).

    Returns:
        The model.
    """
    agent = dict(AGENT_DEFAULTS)
    tools = dict(TOOL_DEFAULTS)
    fields: dict[str, Any] = {"p_feasible": p_feasible(info.task_params if info else {})}
    if info is not None:
        agent.update({k: v for k, v in info.agent.items() if k in AGENT_DEFAULTS})
        found_tools = info.task_params.get("tools")
        if isinstance(found_tools, Mapping):
            tools.update({k: v for k, v in found_tools.items() if k in TOOL_DEFAULTS})
        fields["horizon"] = info.max_steps
        fields["token_budget"] = info.token_budget
        fields["w_failure"] = float(info.objective.get("failure", 1.0))
        fields["w_tokens"] = float(info.objective.get("tokens", 0.0))
        fields["w_replan"] = float(info.objective.get("replan_rate", 0.0))
    bias, noise, tol = agent["bias"], agent["noise"], agent["critique_tolerance"]
    if noise > 0:
        z = math.sqrt(2.0) * noise
        p_right = 0.5 * (math.erf((tol - bias) / z) - math.erf((-tol - bias) / z))
    else:
        p_right = 1.0 if abs(bias) <= tol else 0.0
    # a tool call times out when its log-normal latency passes the timeout
    if tools["latency_sigma"] > 0:
        zt = math.log(tools["timeout"] / tools["latency_median"]) / tools["latency_sigma"]
        p_timeout = 0.5 * math.erfc(zt / math.sqrt(2.0))
    else:
        p_timeout = float(tools["latency_median"] > tools["timeout"])
    fail = p_timeout + (1 - p_timeout) * tools["failure_rate"]
    fields.update(
        alpha=agent["plan_alpha"],
        beta=agent["plan_beta"],
        critique_gain=agent["critique_gain"],
        p_right=p_right,
        quality_floor=agent["quality_floor"],
        fail=fail,
        bias=bias,
        noise=noise,
        context_knee=float(agent["context_knee"]),
        context_decay=agent["context_decay"],
        system_tokens=int(agent["system_tokens"]),
        plan_tokens=int(agent["plan_tokens"]),
        continue_tokens=int(agent["continue_tokens"]),
        act_tokens=int(agent["act_tokens"]),
        eval_tokens=int(agent["eval_tokens"]),
    )
    fields.update(overrides)
    return BayesModel(**fields)


# the task structure fitted on flight_booking, tuning seed 100 (docs/notes/bayes.md, "Fitting");
# the chain at ``stages`` is controllers.bayes.model's FITTED_* (the model's defaults)
FITTED: dict[str, float] = {
    "productive_base": FITTED_PRODUCTIVE[0],
    "productive_gain": FITTED_PRODUCTIVE[1],
    "kappa_base": FITTED_KAPPA,
    "kappa_gain": 0.0,
}


class BayesReflector:
    """The Bayes decision on an approximate model of the loop: highest expected objective.

    Its parameters are the model's task structure and discretisation (the rest
    comes from the spec): ``stages``, ``productive_base``, ``productive_gain``,
    the chance ``kappa_base`` + ``kappa_gain``·q that a task which looks complete is
    complete, ``reading_bins``, ``quality_points``, ``quality_classes``,
    ``belief_points`` (the belief grid at ``stages``), the context model's
    ``goal_tokens``, ``observation_tokens`` and ``result_tokens``, the reserve
    ``token_margin``, ``productive_act``, the δ_act at or above which a step
    counts as productive, and ``early_entry`` (whether an unproductive step below
    ``stages`` that reads δ_task high enters the chain early).  The chain at
    ``stages`` (its states' reading levels, entry and move lines, the early entry's
    lines) is the one fitted on flight_booking (``controllers.bayes.model``).
    """

    name = "bayes"

    # nothing to tune: the law is derived from the model (the shoot-out still searches the
    # shared stop confirmation); the task-structure parameters below are the model's
    SPACE: ClassVar[dict[str, tuple[float, float]]] = {}

    def __init__(
        self,
        stages: int = 4,
        productive_base: float = FITTED["productive_base"],
        productive_gain: float = FITTED["productive_gain"],
        kappa_base: float = FITTED["kappa_base"],
        kappa_gain: float = FITTED["kappa_gain"],
        reading_bins: int = 20,
        quality_points: int = 101,
        quality_classes: int = 10,
        belief_points: int = 6,
        goal_tokens: int = 40,
        observation_tokens: int = 30,
        result_tokens: int = 20,
        productive_act: float = 0.8,
        token_margin: float = 8000.0,
        early_entry: bool = True,
    ) -> None:
        """Build the law; its model is completed by the spec (``bind_model``).

        Args:
            stages: Visibly productive steps the task needs (flight_booking: search,
                points, shortlist, booking).
            productive_base: P(productive) of a step at quality 0 (wrong actions that
                still look productive).
            productive_gain: How much P(productive) rises with the effective quality.
            kappa_base: P(complete | the task looks complete), at plan quality 0.
            kappa_gain: Its change with the plan's quality.
            reading_bins: Equal bins the δ_task readings are read in.
            quality_points: Points of the discretised plan-quality prior.
            quality_classes: Classes of the plan's posterior mean kept at ``stages``.
            belief_points: Resolution of the belief grid at ``stages`` (coordinates in
                multiples of 1/belief_points).
            goal_tokens: Tokens of the goal in the context.
            observation_tokens: Tokens of an observation.
            result_tokens: Mean tokens of a tool result in the context.
            productive_act: δ_act at or above which a step was productive.
            token_margin: Tokens kept in reserve when predicting the loop's token check
                (the spread of the real spend around the modelled one).
            early_entry: Whether the model has the fitted early entry into the chain
                (False: the chain is entered only at ``stages``).
        """
        require_unit(
            productive_base=productive_base,
            productive_gain=productive_gain,
            productive_act=productive_act,
        )
        for name, value in (("kappa_base", kappa_base), ("kappa_gain", kappa_gain)):
            if not -1.0 <= value <= 1.0:
                raise ValueError(f"{name} must be in [-1, 1], got {value}")
        if productive_base + productive_gain > 1.0:
            raise ValueError("productive_base + productive_gain must be <= 1")
        if (
            stages < 1
            or reading_bins < 1
            or quality_points < 2
            or quality_classes < 1
            or belief_points < 1
        ):
            raise ValueError(
                "stages, reading_bins, quality_classes and belief_points must be >= 1, "
                "quality_points >= 2"
            )
        self.overrides: dict[str, Any] = {
            "stages": int(stages),
            "productive_base": productive_base,
            "productive_gain": productive_gain,
            "kappa_base": kappa_base,
            "kappa_gain": kappa_gain,
            "reading_bins": int(reading_bins),
            "quality_points": int(quality_points),
            "quality_classes": int(quality_classes),
            "belief_points": int(belief_points),
            "goal_tokens": int(goal_tokens),
            "observation_tokens": int(observation_tokens),
            "result_tokens": int(result_tokens),
            "token_margin": float(token_margin),
        }
        if not early_entry:
            self.overrides["early_stages"] = ()
        self.productive_act = productive_act
        self._info: ModelInfo | None = None
        self._model: BayesModel | None = None
        self._solution: Solution | None = None  # kept: the cache's key hashes the whole model
        self.reset()

    @classmethod
    def of_model(cls, model: BayesModel, productive_act: float = 0.8) -> BayesReflector:
        """The law of a given model (tests, the model's own simulation)."""
        law = cls(productive_act=productive_act)
        law._model = model
        law.reset()
        return law

    def bind_model(self, model: ModelInfo) -> None:
        """Receive the spec's model parameters (agent, tools, limits, objective).

        Raises:
            ValueError: for a task or agent the model does not describe (only
                flight_booking with the simulated agent): its "optimum" would mean nothing.
        """
        if model.task not in MODELLED_TASKS or model.agent_kind != "simulated":
            raise ValueError(
                f"bayes models {', '.join(MODELLED_TASKS)} with the simulated agent; "
                f"not {model.task!r} with a {model.agent_kind!r} agent"
            )
        self._info = model
        self._model = None
        self._solution = None

    @property
    def model(self) -> BayesModel:
        """The model whose Bayes decision the law takes (an approximation of the task)."""
        if self._model is None:
            self._model = model_from(self._info, self.overrides)
        return self._model

    @property
    def solution(self) -> Solution:
        """The model's solution (solved once per model, cached in-process)."""
        if self._solution is None:
            self._solution = solution(self.model)
        return self._solution

    def reset(self) -> None:
        """Back to the belief before the first step."""
        self.m = 0
        self.a = 0
        self.b = 0
        self.belief: np.ndarray | None = None  # over the states at ``stages``
        self.c = 0  # the plan's class at ``stages``
        self._next = (1, 0, True)  # the coming step: (step, replans before it, fresh plan)

    @property
    def p(self) -> float:
        """P(the task looks complete)."""
        return float(self.belief[-1]) if self.belief is not None else 0.0

    def observe(self, evaluation: Evaluation, ctx: ReflectContext) -> None:
        """Update the belief with one step's evaluation (Bayes' rule on the model)."""
        model = self.model
        j, r, fresh = self._next
        if ctx.plan_age == 1:  # a fresh plan ran this step: its counts start afresh
            self.a = self.b = 0
        failed = evaluation.delta_act < FAILED_ACT
        productive = not failed and evaluation.delta_act >= self.productive_act
        obs = model.reading_probs()[:, model.reading_bin(evaluation.delta_task)]
        if self.m < model.stages:
            if failed:
                return
            early = None
            if not productive:
                self.b += 1
                if not model.early_event(self.m, evaluation.delta_task):
                    return
                early = model.early_index(self.m)  # an early entry into the chain
                obs = model.early_reading_probs()[:, model.reading_bin(evaluation.delta_task)]
            else:
                self.a += 1
                self.m += 1
                if self.m < model.stages:
                    return
            self.m = model.stages
            tab = tables(model)
            replanned = ctx.replans > 0
            n = model.horizon + 1
            a, b = min(self.a, n), min(self.b, n)
            pre = entry_prior(model, tab, j, r, fresh, replanned, early)[a, b]
            self.c = int(tab.classes[replanned][a, b])
        else:
            assert self.belief is not None
            if failed:
                pre = self.belief
            else:
                unprod, prod = model.stage_moves(model.class_quality(self.c, j, r, fresh))
                pre = self.belief @ (prod if productive else unprod)
                if pre.sum() <= 0.0:  # an outcome the model says is impossible
                    pre = self.belief @ (prod + unprod)
        post = pre * obs
        self.belief = post / post.sum()

    def values(self, ctx: ReflectContext) -> dict[str, float]:
        """The expected value (minus the objective to come) of each decision now."""
        sol, model = self.solution, self.model
        t, r = ctx.step, min(ctx.replans, model.horizon)
        done = self.p * model.kappa(self.c) if self.m >= model.stages else 0.0
        stop = -model.w_failure * (1.0 - done)
        if t >= model.horizon:
            return {"continue": -model.w_failure, "replan": -model.w_failure, "terminate": stop}
        if self.m < model.stages:
            a, b = min(self.a, model.horizon + 1), min(self.b, model.horizon + 1)
            cont = sol.step_vector(t, r, False)[self.m, a, b]
            rep = sol.step_vector(t, r, True)[self.m, a, b]
        else:
            assert self.belief is not None
            cont = value_at(sol.action_vectors(t, r, False, self.c), self.belief)
            rep = value_at(sol.action_vectors(t, r, True, self.c), self.belief)
        return {"continue": float(cont), "replan": float(rep), "terminate": stop}

    def decide(self, evaluation: Evaluation, ctx: ReflectContext) -> Decision:
        """Update the belief, then take the decision of highest expected value.

        Args:
            evaluation: The agent's self-assessment (δ_act: productive or failed; δ_task).
            ctx: The step, the replans so far and the plan's age.

        Returns:
            The decision, with terms ``p_done`` (P(complete)), ``stage``, the plan's
            counts and each decision's value; ties go to CONTINUE, then REPLAN.
        """
        self.observe(evaluation, ctx)
        v = self.values(ctx)
        at = self.m >= self.model.stages
        terms = {
            "p_done": self.p * self.model.kappa(self.c) if at else 0.0,
            "p_looks_done": self.p if at else 0.0,
            "stage": float(self.m),
            "productive": float(self.a),
            "unproductive": float(self.b),
            "value_continue": v["continue"],
            "value_replan": v["replan"],
            "value_terminate": v["terminate"],
        }
        best = max(v.values())
        r = min(ctx.replans, self.model.horizon)
        if v["continue"] >= best - EPS:
            self._next = (ctx.step + 1, r, False)
            return Decision(ControlSignal.CONTINUE, "continuing is worth most", terms)
        if v["replan"] >= best - EPS:
            self.a = self.b = 0
            if at:
                self.c = self.model.replan_class()
            self._next = (ctx.step + 1, r, True)
            return Decision(ControlSignal.REPLAN, "a fresh plan is worth most", terms)
        if terms["p_done"] >= 0.5:
            return Decision(ControlSignal.TERMINATE, "goal reached: P(done) is high enough", terms)
        return Decision(
            ControlSignal.TERMINATE, "give up: nothing left is worth its cost", terms, give_up=True
        )


def describe_model(model: BayesModel) -> dict[str, Any]:
    """The model's numbers, for reports."""
    return asdict(model)
