"""The live record is a run directory of the one row schema; the self-evaluation helper."""

from __future__ import annotations

import json

import pytest

from opar_sim import ControlSignal
from opar_sim.cli.main import main
from opar_sim.llm.scripted import ScriptedBackend
from opar_sim.rundir import EpisodeRow, StepRow
from opar_sim.rundir.schema import problems
from opar_sim.runtime import Gate, HostStep, LawError, LiveRecorder, ToolCall
from opar_sim.runtime.harness import TaskHarness
from opar_sim.runtime.selfeval import OpenAICompatibleBackend, SelfEvaluator
from opar_sim.runtime.tuned import load_tuned, tuned_law
from opar_sim.spec.build import load_spec

EVALUATION = {
    "critique": "read the forecast",
    "delta_task": 0.5,
    "delta_act": 0.9,
    "delta_plan": 0.0,
    "confidence": 0.7,
    "sufficient": False,
    "missing": ["the advice"],
    "next_action": "advise",
}


def _lines(path):
    return [json.loads(x) for x in path.read_text().splitlines()]


def test_a_trace_law_run_is_a_run_directory_of_the_schema(tmp_path):
    spec = load_spec("experiments/weather.toml")
    gate = Gate("repeat:2", recorder=LiveRecorder(tmp_path / "run", spec, agent="host"))
    for episode in range(2):
        gate.begin()
        call = ToolCall("get_weather", {"city": "Paris"}, result="Paris: rain")
        gate.step(HostStep([call], tokens=50, answer="?"))
        verdict = gate.step(HostStep([call, ToolCall("advise", {}, "bad args")], tokens=70))
        assert verdict.signal is ControlSignal.TERMINATE and verdict.give_up
        gate.end(success=episode == 1)
    out = gate.recorder.close()
    steps, episodes = _lines(out / "steps.jsonl"), _lines(out / "episodes.jsonl")
    assert all(problems(r, StepRow) == [] for r in steps)
    assert all(problems(r, EpisodeRow) == [] for r in episodes)
    assert [(s["repeat"], s["tool_calls"], s["tokens"]) for s in steps[:2]] == [
        (1, 1, 50),
        (2, 2, 120),
    ]
    assert steps[1]["tool_error"] == "bad args" and steps[1]["calls"][1]["error"] is True
    assert [e["outcome"] for e in episodes] == ["failure", "success"]
    assert json.loads((out / "spec.json").read_text())["controller"]["name"] == "repeat:2"
    assert json.loads((out / "summary.json").read_text())["repeat:2"]["episodes"] == 2
    assert main(["advise", str(out)]) == 0


def test_a_harnessed_run_replays_and_judges_a_stop(tmp_path):
    spec = load_spec("experiments/weather.toml")
    backend = ScriptedBackend([json.dumps(EVALUATION)])
    evaluator = SelfEvaluator(backend, "advise on an umbrella", ["get_weather", "advise"])
    recorder = LiveRecorder(tmp_path / "run", spec)
    gate = Gate("threshold", evaluator=evaluator, recorder=recorder)
    harness = TaskHarness("weather", spec.seed, 0)
    gate.begin()
    result = harness.call("get_weather", city="Paris")
    host = HostStep([ToolCall("get_weather", {"city": "Paris"}, result=result.text)], tokens=30)
    verdict = gate.step(harness.observe(host))
    gate.end(
        truth=harness.truth(), stopped=None if verdict.signal.value == "terminate" else "max_steps"
    )
    recorder.close()
    (row,) = _lines(tmp_path / "run" / "steps.jsonl")
    assert (row["delta_task"], row["confidence"], row["missing"]) == (0.5, 0.7, ["the advice"])
    assert (row["progress"], row["expert"], row["visible_progress"]) == (0.5, True, 0.5)
    assert evaluator.spent == {"calls": 1, "prompt_tokens": 100, "completion_tokens": 20}
    messages, schema, _ = backend.requests[0]
    assert (
        f'Last step: get_weather({{"city": "Paris"}}) -> {result.text}' in messages[-1]["content"]
    )
    assert schema["properties"]["next_action"]["enum"] == ["get_weather", "advise", "stop"]
    assert main(["replay", str(tmp_path / "run"), "--controller", "confidence"]) == 0


def test_an_evaluator_that_fails_twice_stops_the_gate_with_a_reason():
    evaluator = SelfEvaluator(ScriptedBackend(["not json"]), "goal", ["t"])
    with pytest.raises(LawError, match="self-evaluation failed twice"):
        Gate("pid", evaluator=evaluator).step(HostStep())


def test_the_openai_compatible_backend_sends_the_schema(httpserver):
    reply = {
        "choices": [{"message": {"content": json.dumps(EVALUATION)}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 40, "completion_tokens": 12},
    }
    httpserver.expect_request("/v1/chat/completions", method="POST").respond_with_json(reply)
    backend = OpenAICompatibleBackend("m", base_url=httpserver.url_for("/v1"), api_key="k")
    evaluation = SelfEvaluator(backend, "goal", ["lookup"])(HostStep(answer="hi"), ())
    assert (evaluation.delta_task, evaluation.delta_act) == (0.5, 0.9)
    ((request, _),) = httpserver.log
    body = request.get_json()
    assert body["response_format"]["json_schema"]["schema"]["properties"]["next_action"][
        "enum"
    ] == [
        "lookup",
        "stop",
    ]
    assert request.headers["Authorization"] == "Bearer k"


def test_a_gate_from_a_tuning_directory(tmp_path):
    (tmp_path / "best.toml").write_text("# keep\n[controller.params]\nkp = 0.7\n")
    with pytest.raises(LawError, match="names no law"):
        tuned_law(tmp_path)
    (tmp_path / "best.toml").write_text(
        '[controller]\nname = "pid"\n[controller.params]\nkp = 0.7\n'
    )
    gate = load_tuned(tmp_path, time_unit="seconds")
    assert gate.name == "pid" and gate.law.kp == 0.7 and gate.time_unit == "seconds"
    with pytest.raises(LawError, match=r"no best\.toml"):
        tuned_law(tmp_path / "nowhere")
