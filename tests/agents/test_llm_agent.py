"""The LLM agent over a scripted backend: prompts, validation, time, costs, failures."""

from __future__ import annotations

import subprocess
import sys

import pytest

import controllers
import environments
from opar_sim.agents.llm import LLMAgent, LLMAgentParams, progress_listener
from opar_sim.core.limits import Limits
from opar_sim.core.loop import run_episode
from opar_sim.core.seeding import episode_seed
from opar_sim.core.types import ControlSignal, Decision
from opar_sim.llm import BackendUnavailable, ScriptedBackend
from opar_sim.llm.config import GenerationSpeed
from opar_sim.llm.prompts import describe_tool
from opar_sim.llm.schemas import action_schema
from opar_sim.rundir.rows import episode_row
from opar_sim.spec.build import build, parse_spec
from opar_sim.spec.schema import SpecError
from tests.agents.llm_fakes import (
    Responder,
    action_reply,
    evaluation_reply,
    phase_of,
    plan_reply,
)
from tests.conftest import EXPERIMENTS

QUIET = {"tools": {"failure_rate": 0.0, "latency_sigma": 0.0}}
RAINY = {"rain_probability": 1.0, **QUIET}  # the forecast says rain: advise an umbrella
WEATHER = action_reply("get_weather", city="Paris")
UMBRELLA = action_reply("advise", umbrella=True)


FOUR_STEPS = Limits(max_steps=4)
WEATHER_PLAN = (plan_reply("get_weather", "advise"),)


def weather_episode(agent, limits=FOUR_STEPS, episode=0, **params):
    task = environments.make("weather", **(RAINY | params))
    result = run_episode(
        task, agent, controllers.make("threshold"), limits, episode_seed(1, episode)
    )
    return task, result


def scripted(actions, evaluations, plans=WEATHER_PLAN, **kw):
    responder = Responder(plans, actions, evaluations)
    return responder, ScriptedBackend([responder], **kw)


def test_scripted_replies_drive_an_episode_to_success():
    responder, backend = scripted(
        [WEATHER, UMBRELLA], [evaluation_reply(0.5), evaluation_reply(1.0)]
    )
    agent = LLMAgent(backend)
    _, result = weather_episode(agent)
    assert result.outcome == "success"
    assert [r.action.label() for r in result.steps] == [
        "get_weather(city=Paris)",
        "advise(umbrella=True)",
    ]
    assert [r.decision.signal for r in result.steps] == [
        ControlSignal.CONTINUE,
        ControlSignal.TERMINATE,
    ]
    assert responder.phases == ["plan", "act", "evaluate", "act", "evaluate"]
    assert result.cost.llm_calls == 5
    assert result.cost.tokens == 5 * (100 + 20)
    assert all(r.expert for r in result.steps)


def test_simulated_time_comes_from_token_counts_at_the_configured_speed():
    # 100 prompt tokens at 400/s + 20 completion tokens at 20/s: 1.25 s per call, whatever
    # the call measured (2 s here); the measured time is recorded beside it
    _, backend = scripted([WEATHER], [evaluation_reply(0.5)], seconds=2.0)
    agent = LLMAgent(backend, speed=GenerationSpeed(400.0, 20.0))
    _, result = weather_episode(agent, Limits(max_steps=1))
    tool_latency = result.steps[0].result.latency
    assert result.steps[0].time == pytest.approx(3 * 1.25 + tool_latency)
    assert result.cost.wall_seconds == pytest.approx(3 * 2.0)
    calls = agent.drain_calls()
    assert [c["sim_seconds"] for c in calls] == [1.25, 1.25, 1.25]
    assert [c["wall_seconds"] for c in calls] == [2.0, 2.0, 2.0]
    assert episode_row(result)["wall_seconds"] == pytest.approx(6.0)


def test_the_evaluator_runs_at_its_own_speed():
    _, light = scripted([WEATHER], ["{}"], seconds=9.0)
    _, strong = scripted(["{}"], [evaluation_reply(0.5)], seconds=9.0)
    agent = LLMAgent(
        light,
        strong,
        speed=GenerationSpeed(100.0, 10.0),
        evaluator_speed=GenerationSpeed(50.0, 4.0),
    )
    _, result = weather_episode(agent, Limits(max_steps=1))
    # plan and act: 100/100 + 20/10 = 3 s each; evaluate: 100/50 + 20/4 = 7 s
    assert result.steps[0].time == pytest.approx(3 + 3 + 7 + result.steps[0].result.latency)


def test_the_measured_clock_advances_by_the_backends_durations():
    _, backend = scripted([WEATHER], [evaluation_reply(0.5)], seconds=2.0)
    agent = LLMAgent(backend, params=LLMAgentParams(clock="measured"))
    _, result = weather_episode(agent, Limits(max_steps=1))
    tool_latency = result.steps[0].result.latency
    assert result.steps[0].time == pytest.approx(3 * 2.0 + tool_latency)


def test_a_simulated_agent_episode_row_has_no_wall_field():
    task = environments.make("weather", **RAINY)
    agent = build(parse_spec({"name": "x"})).make_agent()
    result = run_episode(task, agent, controllers.make("threshold"), FOUR_STEPS, episode_seed(1, 0))
    assert "wall_seconds" not in episode_row(result)


class AlwaysReplan:
    name = "always_replan"

    def reset(self) -> None:
        pass

    def decide(self, evaluation, ctx):
        return Decision(ControlSignal.REPLAN, "test: replan every step")


def test_replan_asks_the_model_for_a_new_plan_with_the_critique_never_the_cache():
    critique = evaluation_reply(0.3, critique="Paris was the wrong city")
    responder, backend = scripted([WEATHER], [critique])
    agent = LLMAgent(backend)
    task = environments.make("weather", **RAINY)
    for episode in (0, 1):
        run_episode(task, agent, AlwaysReplan(), Limits(max_steps=3), episode_seed(1, episode))
    # per episode: the first plan, then a new plan after each of the two enacted REPLANs;
    # the second episode's first plan is the only cache hit
    assert agent.cache_hits == 1
    assert responder.phases.count("plan") == 3 + 2
    plan_prompts = [
        m[-1]["content"] for m, schema, _ in backend.requests if phase_of(schema) == "plan"
    ]
    first, *replans = plan_prompts
    assert "rejected" not in first and "Critique" not in first
    assert len(replans) == 4
    for prompt in replans:
        assert "Critique of the previous attempt: Paris was the wrong city" in prompt
        assert "rejected the current plan (get_weather, advise)" in prompt


def test_an_unknown_tool_is_an_invalid_action_and_never_executed():
    _, backend = scripted([action_reply("delete_everything")], [evaluation_reply(0.0)])
    task, result = weather_episode(LLMAgent(backend))
    first = result.steps[0]
    assert first.action is None and first.error == "invalid_action"
    assert task.budget == task.params.budget  # no tool ran
    assert result.outcome == "error:invalid_format"  # three invalid actions in a row
    assert result.cost.tool_calls == 0


def test_arguments_that_break_the_tools_schema_are_an_invalid_action():
    _, backend = scripted([action_reply("advise", umbrella="maybe")], [evaluation_reply(0.0)])
    task, result = weather_episode(LLMAgent(backend), Limits(max_steps=1))
    assert result.steps[0].error == "invalid_action"
    assert task.advice is None


def test_output_that_stays_invalid_after_the_retry_is_recorded_as_invalid_format():
    _, backend = scripted(["{not json"], [evaluation_reply(0.0)])
    agent = LLMAgent(backend)
    _, result = weather_episode(agent, Limits(max_steps=1))
    assert result.steps[0].error == "invalid_format"
    act = [c for c in agent.drain_calls() if c.get("phase") == "act"]
    assert act[0]["attempts"] == 2 and act[0]["error"] == "invalid_format"


def test_an_unreachable_backend_ends_the_episode_as_backend_unavailable():
    backend = ScriptedBackend([BackendUnavailable("cannot reach Ollama: start `ollama serve`")])
    agent = LLMAgent(backend)
    _, result = weather_episode(agent)
    assert result.outcome == "error:backend_unavailable"
    assert result.steps == []
    assert agent.drain_calls()[0]["error"] == "backend_unavailable"


def test_the_light_backend_plans_and_acts_and_the_strong_one_evaluates():
    light_responder, light = scripted([WEATHER, UMBRELLA], ["{}"])
    strong_responder, strong = scripted(["{}"], [evaluation_reply(0.5), evaluation_reply(1.0)])
    _, result = weather_episode(LLMAgent(light, strong))
    assert result.outcome == "success"
    assert set(light_responder.phases) == {"plan", "act"}
    assert set(strong_responder.phases) == {"evaluate"}


def test_a_repeated_situation_reuses_the_cached_plan():
    responder, backend = scripted(
        [WEATHER, UMBRELLA], [evaluation_reply(0.5), evaluation_reply(1.0)]
    )
    agent = LLMAgent(backend)
    weather_episode(agent, episode=0)
    responder.used = dict.fromkeys(responder.used, 0)
    _, second = weather_episode(agent, episode=1)
    assert second.outcome == "success"
    assert agent.cache_hits == 1
    assert responder.phases.count("plan") == 1
    hits = [c for c in agent.drain_calls() if c.get("cache_hit")]
    assert len(hits) == 1 and hits[0]["phase"] == "plan"


def test_the_cache_can_be_switched_off():
    responder, backend = scripted(
        [WEATHER, UMBRELLA], [evaluation_reply(0.5), evaluation_reply(1.0)]
    )
    agent = LLMAgent(backend, params=LLMAgentParams(plan_cache=False))
    for episode in (0, 1):
        responder.used = dict.fromkeys(responder.used, 0)
        weather_episode(agent, episode=episode)
    assert agent.cache_hits == 0 and responder.phases.count("plan") == 2


def test_an_invalid_evaluation_holds_the_last_reading():
    _, backend = scripted([WEATHER], [evaluation_reply(0.5, confidence=0.4), "oops"])
    _, result = weather_episode(LLMAgent(backend), Limits(max_steps=2))
    first, second = (r.evaluation for r in result.steps)
    assert (second.delta_task, second.confidence) == (first.delta_task, first.confidence)
    assert second.critique.startswith("evaluation failed")


def test_tools_are_described_with_their_argument_schemas():
    flights = environments.make("flight_booking")
    assert describe_tool(flights.tools["search_flights"]) == (
        '- search_flights(range: "next_week"|"widened"): Search flights to Tokyo for a date range'
    )
    book = describe_tool(flights.tools["book_flight"])
    assert 'book_flight(flight_id: int 0.., payment: "points"|"cash")' in book
    assert "high risk" in book


def test_the_action_schema_offers_exactly_the_tasks_tools():
    flights = environments.make("flight_booking")
    options = action_schema(flights.tools)["anyOf"]
    assert [o["properties"]["tool"]["const"] for o in options] == list(flights.tools)
    search = options[0]["properties"]["args"]
    assert search["properties"]["range"]["enum"] == ["next_week", "widened"]


def spec(agent):
    return {"name": "t", "task": {"name": "weather"}, "agent": agent}


def test_a_spec_with_an_llm_agent_builds_an_llm_agent(monkeypatch):
    monkeypatch.setenv("OLLAMA_HOST", "gpu-box:9999")
    agent = {
        "kind": "llm",
        "backend": {"backend": "ollama", "model": "qwen2.5:0.5b"},
        "evaluator": {"backend": "ollama", "model": "qwen2.5:3b"},
    }
    made = build(parse_spec(spec(agent))).make_agent()
    assert isinstance(made, LLMAgent)
    assert made.backend.host == "http://gpu-box:9999"
    assert (made.backend.model, made.evaluator.model) == ("qwen2.5:0.5b", "qwen2.5:3b")


@pytest.mark.parametrize(
    ("agent", "message"),
    [
        ({"kind": "llm", "backend": {"backend": "vllm"}}, "agent.backend.backend"),
        ({"kind": "llm", "backend": {"num_predict": 0}}, "agent.backend.num_predict"),
        ({"kind": "llm", "backend": {"modle": "x"}}, "agent.backend.modle: unknown key"),
        ({"kind": "llm", "params": {"history": 3}}, "agent.params.history: unknown key"),
    ],
)
def test_bad_llm_settings_name_the_key(agent, message):
    with pytest.raises(SpecError, match=message):
        parse_spec(spec(agent))


def test_agent_llm_on_a_simulated_spec_uses_the_embedded_model_by_default():
    from opar_sim.llm.llamacpp_backend import LlamaCppBackend
    from opar_sim.spec.build import load_spec
    from opar_sim.spec.edit import with_overrides

    path = EXPERIMENTS / "weather.toml"
    agent = build(with_overrides(load_spec(path), agent="llm")).make_agent()
    assert isinstance(agent, LLMAgent) and isinstance(agent.backend, LlamaCppBackend)
    assert agent.backend.model == "smollm2" and agent.evaluator is agent.backend


def test_the_simulated_path_never_imports_an_llm_client():
    code = (
        "import sys, opar_sim.cli.main, opar_sim.running.runner, opar_sim.spec.schema;"
        "print(sorted(m for m in ('ollama', 'httpx', 'xllamacpp') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_progress_listener_sees_every_phase_with_tokens_and_the_last_action():
    _, backend = scripted([WEATHER, UMBRELLA], [evaluation_reply(0.5), evaluation_reply(1.0)])
    events = []
    with progress_listener(events.append):
        weather_episode(LLMAgent(backend))
    weather_episode(LLMAgent(backend))  # closed: no more events
    assert [(e.episode_step, e.phase) for e in events] == [
        (1, "plan"),
        (1, "act"),
        (1, "evaluate"),
        (2, "act"),
        (2, "evaluate"),
    ]
    assert [e.tokens for e in events] == [120, 240, 360, 480, 600]
    assert events[1].last == "get_weather(city=Paris)"
    assert events[2].last.startswith("get_weather(city=Paris) -> ok: ")
    assert events[4].last.startswith("advise(umbrella=True) -> ")
