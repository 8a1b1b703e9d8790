"""The worked path of docs/runtime.md, end to end: tune → gate → a real agent → replay, calibrate.

A PID law is tuned on the simulated weather task (a small budget), loaded into the gate
from the tuning directory, and decides inside a LangChain agent whose model is SmolLM2
behind the Ollama-protocol test server (tests/llm/ollama_server.py); its tools run the
weather task's simulated world (``TaskHarness``), and the gate's self-evaluation is the
extra call through the same endpoint.  The record is replayed under another law,
calibrated from, and reported.
"""

from __future__ import annotations

import json
import os
import shutil

import pytest

pytest.importorskip(
    "langchain", reason="LangChain is not installed: pip install 'opar-sim[agents]'"
)
pytest.importorskip(
    "langchain_ollama", reason="langchain-ollama is not installed: pip install 'opar-sim[agents]'"
)

from langchain.agents import create_agent
from langchain.agents.middleware import ModelCallLimitMiddleware
from langchain_core.tools import tool
from langchain_ollama import ChatOllama

from opar_sim import ControlSignal
from opar_sim.api import tune
from opar_sim.cli.main import main
from opar_sim.llm.ollama_backend import OllamaBackend
from opar_sim.runtime import LiveRecorder
from opar_sim.runtime.adapters.langchain import GateMiddleware
from opar_sim.runtime.harness import TaskHarness
from opar_sim.runtime.selfeval import SelfEvaluator
from opar_sim.runtime.tuned import load_tuned, tuned_law
from opar_sim.studies.tune import TuneBudget
from tests.llm.ollama_server import MODEL, OllamaServer
from tests.llm.test_llm_integration import embedded  # noqa: F401  (the module's model)

pytestmark = pytest.mark.llm

SPEC = """name = "weather_live"
episodes = 20
seed = 0
[task]
name = "weather"
[controller]
name = "pid"
[controller.params]
replan_threshold = 1.2
[limits]
max_steps = 4
time_budget = 120.0
token_budget = 50000
[tune]
trials = 3
train_episodes = 20
holdout_episodes = 40
[tune.space]
"controller.params.kp" = { low = 0.5, high = 2.0 }
"controller.params.replan_threshold" = { low = 0.8, high = 2.0 }
"""
EPISODES = 2
MAX_CALLS = 4  # the host's own cap: model calls per run


@pytest.fixture(scope="module")
def server(embedded):  # noqa: F811
    srv = OllamaServer(embedded).start()
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def tuned(tmp_path_factory):
    spec = tmp_path_factory.mktemp("spec") / "weather_live.toml"
    spec.write_text(SPEC)
    out = tmp_path_factory.mktemp("tune") / "tuned"
    budget = TuneBudget(replicates=1, confirm_episodes=20)
    tune(spec, budget, out=out)
    return out


@pytest.fixture(scope="module")
def live(server, tuned, tmp_path_factory):
    """Two episodes of a LangChain agent on SmolLM2, the tuned PID deciding; the record."""
    name, params, spec = tuned_law(tuned)
    out = tmp_path_factory.mktemp("live") / "run"
    harness = {"now": None}
    evaluator = SelfEvaluator(
        OllamaBackend(MODEL, host=server.url, num_predict=160),
        goal="Paris weather: should I take an umbrella?",
        tools=["get_weather", "advise"],
        seed=0,
    )
    recorder = LiveRecorder(out, spec, agent=f"{MODEL} (langchain)")
    gate = load_tuned(tuned, evaluator=evaluator, recorder=recorder, step_seconds=2.0)

    @tool
    def get_weather(city: str) -> str:
        """Read the forecast of a city."""
        result = harness["now"].call("get_weather", city=city)
        return result.text

    @tool
    def advise(umbrella: bool) -> str:
        """Give the final advice: take an umbrella (true) or not (false)."""
        return harness["now"].call("advise", umbrella=umbrella).text

    model = ChatOllama(model=MODEL, base_url=server.url, temperature=0.0, num_predict=64)
    observe = lambda messages, host: harness["now"].observe(host)  # noqa: E731
    agent = create_agent(
        model,
        [get_weather, advise],
        middleware=[
            GateMiddleware(gate, observe=observe),
            ModelCallLimitMiddleware(run_limit=MAX_CALLS, exit_behavior="end"),
        ],
    )
    signals = []
    for episode in range(EPISODES):
        harness["now"] = TaskHarness("weather", spec.seed, episode)
        gate.begin(episode)
        state = agent.invoke({"messages": [{"role": "user", "content": harness["now"].goal}]})
        signals.append([d.signal for d in gate.decisions])
        terminated = bool(signals[-1]) and signals[-1][-1] is ControlSignal.TERMINATE
        gate.end(
            truth=harness["now"].truth(),
            stopped=None if terminated else "max_steps",
            answer=state["messages"][-1].text,
        )
    recorder.close()
    return {"out": out, "name": name, "params": params, "signals": signals, "evaluator": evaluator}


def _lines(path):
    return [json.loads(x) for x in path.read_text().splitlines()]


def test_the_tuned_law_is_the_gates(tuned, live):
    name, params, _ = tuned_law(tuned)
    assert name == "pid" and set(params) >= {"kp", "replan_threshold"}
    spec = json.loads((live["out"] / "spec.json").read_text())
    assert spec["controller"] == {"name": "pid", "params": params}


def test_the_live_run_is_recorded_as_a_run_directory(live):
    out = live["out"]
    episodes = _lines(out / "episodes.jsonl")
    steps = _lines(out / "steps.jsonl")
    assert [e["episode"] for e in episodes] == list(range(EPISODES))
    assert sum(e["steps"] for e in episodes) == len(steps) == sum(map(len, live["signals"]))
    assert [s["signal"] for s in steps] == [x.value for run in live["signals"] for x in run]
    for s in steps:
        assert 0 <= s["delta_task"] <= 1 and s["reason"] and s["tokens"] > 0
        assert {"progress", "complete", "feasible", "expert", "plan_age"} <= set(s)
    assert all(e["wall_seconds"] > 0 and e["controller"] == "pid" for e in episodes)
    assert live["evaluator"].spent["calls"] >= len(steps)  # one extra call per step at least
    summary = json.loads((out / "summary.json").read_text())
    assert summary["pid"]["episodes"] == EPISODES


def test_the_record_replays_under_another_law_and_reports(live, capsys):
    out = live["out"]
    assert main(["replay", str(out), "--controller", "threshold"]) == 0
    replayed = _lines(out / "replay_threshold.jsonl")
    assert [r["episode"] for r in replayed] == list(range(EPISODES))
    assert main(["replay", str(out), "--controller", "oracle"]) == 2
    assert "records no hidden plan quality" in capsys.readouterr().err
    assert main(["report", str(out)]) == 0
    assert (out / "report.html").is_file()


def test_the_record_calibrates_the_simulated_agent(live):
    out = live["out"]
    argv = ["calibrate", str(out), "--episodes", "40", "--folds", "2", "--cell-episodes", "4"]
    assert main([*argv, "--direct"]) == 0
    snippet = (out / "calibrated.toml").read_text()
    assert "[agent.params]" in snippet and "bias" in snippet


def test_the_live_report_opens_in_the_browser(live, tmp_path):
    from tests.browser import CHROMIUM, FLAGS, browser_or_skip

    sync_api = browser_or_skip()
    out = live["out"]
    if not (out / "report.html").is_file():
        assert main(["report", str(out)]) == 0
    steps = _lines(out / "episodes.jsonl")[0]["steps"]
    errors, outside = [], []
    with sync_api.sync_playwright() as pw:
        executable = CHROMIUM if os.path.isfile(CHROMIUM) else shutil.which("chromium")
        browser = pw.chromium.launch(executable_path=executable, headless=True, args=FLAGS)
        context = browser.new_context(offline=True, viewport={"width": 800, "height": 1000})

        def route(r):
            if r.request.url.startswith("file://"):
                r.continue_()
            else:  # the report must not leave the file
                outside.append(r.request.url)
                r.abort()

        context.route("**/*", route)
        page = context.new_page()
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto((out / "report.html").as_uri())
        page.wait_for_load_state("load")
        page.click("#episode-list tr[data-key='pid|0|1|1']")
        page.wait_for_selector("#trace table tbody tr")
        assert page.locator("#trace table tbody tr").count() == steps
        page.screenshot(path=str(tmp_path / "live_report.png"), full_page=True)
        browser.close()
    assert errors == [] and outside == []
