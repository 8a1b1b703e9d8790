"""The OPAR loop: outcomes from the ground truth, and hard limits that always hold."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import controllers
import environments
from opar_sim import Action, ControlSignal, Decision, Evaluation
from opar_sim.agents import ScriptedAgent, SimulatedAgent
from opar_sim.core.limits import Limits
from opar_sim.core.loop import run_episode
from opar_sim.core.seeding import episode_seed

QUIET = {"tools": {"failure_rate": 0.0, "latency_sigma": 0.0}}
DONE = Evaluation(1.0, 1.0, 0.0, 1.0)
HALF = Evaluation(0.5, 1.0, 0.0, 0.5)
RAIN = Action.of("get_weather", city="Paris")


TEN_STEPS = Limits(max_steps=10)


def weather_run(agent, limits=TEN_STEPS, controller="threshold", **params):
    task = environments.make("weather", **(QUIET | params))
    return run_episode(task, agent, controllers.make(controller), limits, episode_seed(3, 0))


def test_terminate_on_a_complete_task_is_success():
    task = environments.make("weather", **QUIET)
    # the expert's second action depends on the hidden forecast: script it after a dry run
    probe = run_episode(
        task,
        ScriptedAgent([RAIN], [HALF]),
        controllers.make("threshold"),
        Limits(max_steps=1),
        episode_seed(3, 0),
    )
    advice = task.expert_action()
    assert probe.outcome == "truncated:max_steps"
    result = weather_run(ScriptedAgent([RAIN, advice], [HALF, DONE]))
    assert result.outcome == "success"
    assert result.complete and len(result.steps) == 2
    assert [r.decision.signal for r in result.steps] == [
        ControlSignal.CONTINUE,
        ControlSignal.TERMINATE,
    ]


def test_terminate_before_completion_is_premature():
    result = weather_run(ScriptedAgent([RAIN], [DONE]))
    assert result.outcome == "premature"
    assert result.final_progress == 0.5


class ScriptedController:
    """TERMINATE at the first Reflect, claiming completion or (``give_up``) giving up."""

    name = "scripted"

    def __init__(self, give_up: bool) -> None:
        self.give_up = give_up

    def reset(self) -> None:
        """Stateless."""

    def decide(self, evaluation, ctx):
        """TERMINATE with the scripted claim."""
        return Decision(ControlSignal.TERMINATE, "scripted", give_up=self.give_up)


def flight_stop(give_up: bool, infeasible_rate: float):
    task = environments.make("flight_booking", infeasible_rate=infeasible_rate, **QUIET)
    agent = ScriptedAgent([Action.of("search_flights", range="widened")], [DONE])
    controller = ScriptedController(give_up)
    return run_episode(task, agent, controller, Limits(), episode_seed(0, 0))


def test_claiming_completion_on_an_infeasible_task_is_premature_not_gave_up():
    # threshold claims the goal (δ_task = 1) on a world with no fare: a false claim
    task = environments.make("flight_booking", infeasible_rate=1.0, **QUIET)
    agent = ScriptedAgent([Action.of("search_flights", range="widened")], [DONE])
    result = run_episode(task, agent, controllers.make("threshold"), Limits(), episode_seed(0, 0))
    assert (result.outcome, result.feasible, result.complete) == ("premature", False, False)
    assert result.steps[-1].decision.give_up is False
    scripted = flight_stop(give_up=False, infeasible_rate=1.0)
    assert (scripted.outcome, scripted.feasible) == ("premature", False)


def test_giving_up_on_an_infeasible_task_is_gave_up():
    result = flight_stop(give_up=True, infeasible_rate=1.0)
    assert (result.outcome, result.feasible, result.complete) == ("gave_up", False, False)
    assert result.steps[-1].decision.give_up is True


def test_giving_up_on_a_feasible_task_is_abandoned():
    result = flight_stop(give_up=True, infeasible_rate=0.0)
    assert (result.outcome, result.feasible, result.complete) == ("abandoned", True, False)


def test_claiming_completion_on_a_feasible_unfinished_task_is_premature():
    result = flight_stop(give_up=False, infeasible_rate=0.0)
    assert (result.outcome, result.feasible, result.complete) == ("premature", True, False)


class GiveUpOnSecond(ScriptedController):
    """CONTINUE once, then TERMINATE giving up."""

    def reset(self) -> None:
        """Restart the count."""
        self.calls = 0

    def decide(self, evaluation, ctx):
        """CONTINUE at the first Reflect, give up at the second."""
        self.calls += 1
        if self.calls < 2:
            return Decision(ControlSignal.CONTINUE, "scripted")
        return Decision(ControlSignal.TERMINATE, "give up", give_up=True)


def test_giving_up_on_a_task_that_is_in_fact_complete_is_success():
    # the world is judged first (Outcome): a done task hands over a complete answer;
    # the expert's second action depends on the hidden forecast: script it after a dry run
    task = environments.make("weather", **QUIET)
    run_episode(
        task,
        ScriptedAgent([RAIN], [HALF]),
        ScriptedController(False),
        Limits(max_steps=1),
        episode_seed(3, 0),
    )
    agent = ScriptedAgent([RAIN, task.expert_action()], [HALF, HALF])
    task = environments.make("weather", **QUIET)
    done = run_episode(task, agent, GiveUpOnSecond(True), TEN_STEPS, episode_seed(3, 0))
    assert (done.outcome, done.complete, len(done.steps)) == ("success", True, 2)
    assert done.steps[-1].decision.give_up is True


def test_step_limit_truncates_and_returns_the_best_answer_so_far():
    evaluations = [HALF, Evaluation(0.8, 1.0, 0.0, 0.5), HALF, HALF]
    advice = [RAIN, Action.of("advise", umbrella=True), RAIN, RAIN]
    result = weather_run(ScriptedAgent(advice, evaluations), Limits(max_steps=4))
    assert result.outcome == "truncated:max_steps"
    assert len(result.steps) == 4
    assert result.best_step == 2  # the step the agent rated highest
    assert result.answer == "take an umbrella"


def test_time_budget_cuts_the_episode_at_the_deadline():
    agent = ScriptedAgent([RAIN], [HALF], phase_seconds=10.0)
    result = weather_run(agent, Limits(max_steps=50, time_budget=95.0))
    assert result.outcome == "truncated:time"
    assert result.cost.sim_seconds == 95.0


def test_token_budget_is_never_exceeded():
    agent = ScriptedAgent([RAIN], [HALF], tokens_per_call=100)
    result = weather_run(agent, Limits(max_steps=50, token_budget=3000))
    assert result.outcome == "truncated:tokens"
    assert result.cost.tokens <= 3000


def test_repeated_invalid_output_is_an_error_outcome_not_a_crash():
    result = weather_run(ScriptedAgent([None], [HALF]))
    assert result.outcome == "error:invalid_format"
    assert all(r.error == "invalid_format" for r in result.steps)
    assert result.cost.tool_calls == 0


def test_replan_makes_a_new_plan_and_counts_it():
    replan = Evaluation(0.2, 0.0, 1.0, 0.2)
    result = weather_run(ScriptedAgent([RAIN], [replan, replan, HALF]), Limits(max_steps=4))
    assert [r.plan_id for r in result.steps] == [1, 2, 3, 3]
    assert result.cost.replans == 2


def test_same_seed_same_trajectory():
    def once():
        task = environments.make("flight_booking")
        res = run_episode(
            task, SimulatedAgent(), controllers.make("pid"), Limits(), episode_seed(11, 4)
        )
        return [(r.action, r.result, r.evaluation, r.decision, r.time) for r in res.steps]

    assert once() == once()


agent_params = st.fixed_dictionaries(
    {
        "plan_alpha": st.floats(0.2, 5),
        "plan_beta": st.floats(0.2, 5),
        "bias": st.floats(-0.5, 0.5),
        "noise": st.floats(0, 0.5),
        "invalid_format_rate": st.floats(0, 0.5),
        "tokens_per_second": st.floats(5, 500),
        "plan_tokens": st.integers(1, 2000),
    }
)
limits = st.builds(
    Limits,
    max_steps=st.integers(1, 40),
    time_budget=st.floats(0.5, 2000),
    token_budget=st.integers(1, 400_000),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    params=agent_params,
    lim=limits,
    seed=st.integers(0, 2**32 - 1),
    controller=st.sampled_from(["pid", "threshold"]),
    task=st.sampled_from(["weather", "flight_booking"]),
)
def test_hard_limits_always_stop_an_episode(params, lim, seed, controller, task):
    result = run_episode(
        environments.make(task),
        SimulatedAgent(**params),
        controllers.make(controller),
        lim,
        np.random.SeedSequence(seed),
    )
    assert len(result.steps) <= lim.max_steps
    assert result.cost.sim_seconds <= lim.time_budget
    assert result.cost.tokens <= lim.token_budget
    assert result.outcome.split(":")[0] in {"success", "premature", "gave_up", "truncated", "error"}
