"""One row schema: the SimPy runner, the batch engine and the trace importer all write it.

Rows are written through each writer into run directories and every row of
every file is checked against ``rundir.schema`` (field names, their order, types,
required fields); together the writers use every field the schema declares.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from opar_sim.rundir import EPISODES_FILE, STEPS_FILE, STEPS_PARQUET, iter_steps, read_jsonl
from opar_sim.rundir.columnar import EPISODES_PARQUET, read_table
from opar_sim.rundir.schema import EpisodeRow, StepRow, fields_of, problems
from opar_sim.running.runner import run_experiment
from opar_sim.spec.build import load_spec
from opar_sim.traces import import_traces
from tests.conftest import EXPERIMENTS
from tests.tau_bench_data import tau_bench_file

CONTRACT = {  # docs/design.md §6: outside checks read these
    STEPS_FILE: ("episode", "agent", "step", "signal"),
    EPISODES_FILE: ("episode", "agent", "outcome", "success"),
}
SCHEMA = {STEPS_FILE: StepRow, EPISODES_FILE: EpisodeRow}

# every mechanism that adds fields: sub-agents (team), repeated worlds (trials), Reflexion
# attempts, guards, guardrails, tool faults, task features (research_qa)
SIMPY_SPECS = (
    "flight_booking",
    "team",
    "flight_booking_trials",
    "reflexion",
    "flight_booking_guarded",
    "guardrails",
    "research_qa_faults",
)
BATCH_SPECS = ("flight_booking", "compare_flight_booking")


def _run(name: str, out: Path, engine: str, episodes: int) -> Path:
    spec = load_spec(EXPERIMENTS / f"{name}.toml").model_copy(
        update={"episodes": episodes, "seed": 2}
    )
    run_experiment(spec, out, engine=engine)
    return out


def _llm_run(out: Path) -> Path:
    """An LLM agent's episode (its row has ``wall_seconds``), as a chunk writes it."""
    from opar_sim.agents.llm import LLMAgent
    from opar_sim.rundir import episode_lines
    from tests.agents.llm_fakes import evaluation_reply
    from tests.agents.test_llm_agent import UMBRELLA, WEATHER, scripted, weather_episode

    _, backend = scripted([WEATHER, UMBRELLA], [evaluation_reply(0.5), evaluation_reply(1.0)])
    _, result = weather_episode(LLMAgent(backend))
    episode, steps = episode_lines(result)
    out.mkdir()
    (out / EPISODES_FILE).write_text(episode, encoding="utf-8")
    (out / STEPS_FILE).write_text(steps, encoding="utf-8")
    return out


def _turn(tool_calls: list[tuple[str, str]]) -> dict[str, Any]:
    calls = [
        {"id": f"c{k}", "function": {"name": name, "arguments": args}}
        for k, (name, args) in enumerate(tool_calls)
    ]
    return {"role": "assistant", "content": None, "tool_calls": calls}


def _records(path: Path) -> Path:
    """Recorded runs in the generic format: a turn with two calls, an error reply, no calls."""
    messages = [
        {"role": "system", "content": "policy"},
        {"role": "user", "content": "book it"},
        _turn([("get_user_details", '{"u": 1}'), ("search_direct_flight", "{}")]),
        {"role": "tool", "tool_call_id": "c0", "content": "{}"},
        {"role": "tool", "tool_call_id": "c1", "content": "Error: no flight"},
        _turn([("book_reservation", '{"f": 2}')]),
        {"role": "tool", "tool_call_id": "c0", "content": "booked"},
        {"role": "assistant", "content": "Done."},
    ]
    runs = [
        {"task_id": 4, "trial": t, "reward": float(t), "messages": messages, "actions": ["x"]}
        for t in (0, 1)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in runs), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Path]]:
    """Run directories per writer."""
    base = tmp_path_factory.mktemp("schema")
    simpy = [_run(name, base / f"simpy-{name}", "simpy", 2) for name in SIMPY_SPECS]
    simpy.append(_llm_run(base / "llm"))
    batch = [_run(name, base / f"batch-{name}", "batch", 40) for name in BATCH_SPECS]
    imported = [base / "imported"]
    import_traces(_records(base / "runs.jsonl"), "openai-chat", imported[0])
    try:  # the real τ-bench runs too, where the shared data is
        tau = tau_bench_file()
    except pytest.skip.Exception:
        tau = None
    if tau is not None:
        imported.append(base / "tau")
        import_traces(tau, "tau-bench", imported[-1])
    return {"runner": simpy, "batch engine": batch, "trace importer": imported}


def _rows(runs: list[Path], file: str) -> list[dict[str, Any]]:
    # a batch run's steps are in steps.parquet: the one reader reads either form
    if file == STEPS_FILE:
        return [row for run in runs for row in iter_steps(run)]
    return [row for run in runs for row in read_jsonl(run / file)]


@pytest.mark.parametrize("file", [STEPS_FILE, EPISODES_FILE])
@pytest.mark.parametrize("writer", ["runner", "batch engine", "trace importer"])
def test_every_row_fits_the_one_schema(written, writer, file):
    rows = _rows(written[writer], file)
    if writer == "batch engine" and file == STEPS_FILE:  # its steps as columns, not lines
        assert all(not (run / STEPS_FILE).exists() for run in written[writer])
        assert all((run / STEPS_PARQUET).is_file() for run in written[writer])
    assert rows
    misfits = {}
    for number, row in enumerate(rows):
        found = problems(row, SCHEMA[file])
        if found:
            misfits.setdefault(tuple(found), number)
    assert misfits == {}
    for row in rows:
        assert set(CONTRACT[file]) <= set(row)


def test_the_batch_engines_episode_rows_have_the_runners_fields_in_its_order(written):
    simpy = next(read_jsonl(written["runner"][0] / EPISODES_FILE))
    batch = next(read_jsonl(written["batch engine"][0] / EPISODES_FILE))
    assert list(batch) == list(simpy)


def test_the_batch_engines_step_rows_have_the_runners_fields_in_its_order(written):
    simpy = next(read_jsonl(written["runner"][0] / STEPS_FILE))
    batch = next(iter_steps(written["batch engine"][0]))
    left_out = {"observation", "world_changed", "result", "reason", "terms", "answer"}
    left_out |= {"guard", "memory", "intercepted"}  # docs/batch.md: what a batch step lacks
    assert list(batch) == [name for name in simpy if name not in left_out]


def test_the_batch_engines_episode_columns_are_its_episode_lines(written):
    for run in written["batch engine"]:
        table = read_table(run, EPISODES_PARQUET)
        assert table.to_pylist() == list(read_jsonl(run / EPISODES_FILE))


def test_the_writers_together_use_every_field_of_the_schema(written):
    for file, row_type in SCHEMA.items():
        seen = {name for runs in written.values() for row in _rows(runs, file) for name in row}
        assert [f.name for f in fields_of(row_type) if f.name not in seen] == []


def test_the_contract_fields_are_required():
    for file, names in CONTRACT.items():
        required = {f.name for f in fields_of(SCHEMA[file]) if f.required}
        assert set(names) <= required


def test_problems_names_each_departure_from_the_schema():
    row = {"step": 1, "episode": 0, "agent": None, "colour": "red"}
    found = problems(row, StepRow)
    assert "unknown field 'colour'" in found
    assert "missing field 'signal'" in found
    assert any("out of the schema's order" in p for p in found)
    assert "field 'agent': None is not str" in found
