"""Every twin's batch run writes step rows that name actions as the SimPy engine does.

The step recorder is generic (the engine imports no task): each twin turns its action
tuple into an integer key (``TaskTwin.action_key``) and a key into the scalar task's own
label and tool (``TaskTwin.label``), and reports its calls' timeouts and deliveries
(``call_state``).  A batch run of each twin's shipped spec is compared with a SimPy run
of the same spec: the tools and the labels it writes (up to their numbers: a document,
a flight, a record, a query's topic that a small SimPy sample need not reach) are ones
the SimPy engine writes for that task.  ``report`` and ``plot`` work on a batch run of
research_qa_faults, and ``replay`` of its PID on its own rows agrees (issue 27).
"""

from __future__ import annotations

import re

import numpy as np
import pyarrow.parquet as pq
import pytest

from opar_sim.cli import main
from opar_sim.engines.batch import run_batch, step_recorder
from opar_sim.rundir import STEPS_PARQUET, read_jsonl
from opar_sim.running.runner import run_experiment
from opar_sim.spec.build import load_spec
from opar_sim.spec.schema import ControllerSpec

SPECS = ("flight_booking", "weather", "tau_airline_model", "research_qa_faults")
BATCH, SIMPY = 400, 60  # episodes: the batch run's labels must be among the SimPy run's


def _spec(name: str, episodes: int):
    spec = load_spec(f"experiments/{name}.toml")
    update = {"episodes": episodes, "compare": [ControllerSpec(name="pid")], "trials": 1}
    return spec.model_copy(update=update)


def _shape(label: str) -> str:
    """A label with its numbers (and a numbered query's topic) blanked.

    ``fetch(doc=3)`` -> ``fetch(doc=#)``, ``search(query=pacer 2)`` -> ``search(query=* #)``.
    """
    return re.sub(r"query=[a-z ]+ #\)", "query=* #)", re.sub(r"\d+", "#", label))


@pytest.fixture(scope="module", params=SPECS)
def runs(request, tmp_path_factory):
    root = tmp_path_factory.mktemp(request.param)
    run_experiment(_spec(request.param, BATCH), root / "batch", engine="batch")
    run_experiment(_spec(request.param, SIMPY), root / "simpy")
    batch = pq.read_table(root / "batch" / STEPS_PARQUET).to_pylist()
    simpy = list(read_jsonl(root / "simpy" / "steps.jsonl"))
    return request.param, batch, simpy


def test_a_batch_run_names_its_actions_and_tools_as_the_simpy_engine_does(runs):
    name, batch, simpy = runs
    assert batch and simpy
    tools = {row["tool"] for row in batch} - {None}
    assert tools and tools <= {row["tool"] for row in simpy}, name
    shapes = {_shape(row["action"]) for row in batch if row["action"] is not None}
    assert shapes <= {_shape(row["action"]) for row in simpy if row["action"]}, name
    # SimTask.execute's errors (a rare timeout need not show in the small SimPy sample)
    errors = {row["tool_error"] for row in batch}
    assert errors <= {None, "invalid_format", "timeout", "failure", "rejected"}, name
    # a row's action and tool agree: the tool is the label's head
    for row in batch:
        if row["action"] is not None:
            assert row["action"].split("(")[0] == row["tool"], row


def test_a_batch_rows_tool_errors_and_latency_are_the_calls(runs):
    _, batch, _ = runs
    for row in batch:
        if row["tool_error"] in ("timeout", "failure", "rejected"):
            assert not row["ok"]
        if row["tool_error"] is None:
            assert row["ok"] and row["latency"] > 0


def test_research_qa_labels_number_repeated_queries_as_the_scalar_expert_does():
    spec = _spec("research_qa_faults", 1_000)
    recorder = step_recorder(spec)
    run_batch(spec, 0, 0, 1_000, recorder)
    labels = {a for a in recorder.step_table(spec, 0).column("action").to_pylist() if a}
    searches = {a for a in labels if a.startswith("search(")}
    assert "search(query=go gc)" in searches  # the wrong repeat before any search
    assert any(re.fullmatch(r"search\(query=[a-z ]+ 2\)", a) for a in searches)
    assert not any(re.search(r" 1\)$", a) for a in searches)  # a topic's first query: bare


@pytest.mark.parametrize("name", ["research_qa_faults", "weather", "tau_airline_model"])
def test_recording_the_steps_changes_no_result_on_any_twin(name):
    spec = _spec(name, 300)
    plain = run_batch(spec, 0, 0, 300)
    recorded = run_batch(spec, 0, 0, 300, step_recorder(spec))
    for field in ("status", "steps", "prompt_tokens", "sim_seconds", "tool_calls", "replans"):
        assert np.array_equal(getattr(plain, field), getattr(recorded, field)), field


def test_report_plot_and_replay_work_on_a_research_qa_faults_batch_run(tmp_path, capsys):
    out = tmp_path / "run"
    spec = "experiments/research_qa_faults.toml"
    argv = ["run", spec, "--engine", "batch", "--episodes", "2000", "--out", str(out)]
    assert main(argv) == 0
    assert (out / STEPS_PARQUET).is_file()
    assert main(["report", str(out)]) == 0
    assert main(["plot", str(out)]) == 0
    captured = capsys.readouterr()
    assert "no finished episode" not in captured.out + captured.err
    assert "no step rows" not in captured.out + captured.err
    assert (out / "report.html").stat().st_size > 10_000
    for stem in ("convergence", "signals", "outcomes"):
        assert (out / "figures" / f"{stem}.png").is_file(), stem
    # each row holds what the law read: replayed on its own rows, the PID decides alike
    assert main(["replay", str(out), "--controller", "pid"]) == 0
    capsys.readouterr()
    own = [v for v in read_jsonl(out / "replay_pid.jsonl") if v["recorded_controller"] == "pid"]
    assert len(own) == 2000 and {v["verdict"] for v in own} == {"same"}
