"""Bad input is one line and exit 2, never an internal error (exit 70).

Issue 31's attack found exit 70 on: deep JSON nesting and 10^30 or 5,000-digit integers in
a trace; ``tokens: 1e308`` in a row; a damaged ``replay_*.jsonl`` or ``figures.json`` read
back by ``report``; ``output_limits = {a = 1, b = 2}`` in a spec.  One test per case.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import EXPERIMENTS
from tests.reliability.conftest import cli, tally
from tests.traces.test_import import _record

KIND = "exit 70 on bad input"
DEEP = 100_000


def _trace(tmp_path: Path, text: str, name: str = "runs.jsonl") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _imports(tmp_path: Path, capsys: pytest.CaptureFixture[str], path: Path, fmt: str) -> str:
    argv = ["traces", "import", path, "--format", fmt, "--out", tmp_path / "o"]
    status, _, err = cli(argv, capsys)
    assert status == 2 and err.count("\n") == 1, err
    # a file that is not JSON is named with its line; a record that does not fit, by its run
    assert err.startswith((f"opar-sim: error: {path}", "opar-sim: error: run 0 ("))
    assert not (tmp_path / "o" / "steps.jsonl").exists()
    tally(KIND, inputs_tried=1, answered_cleanly=1)
    return err


def test_deep_nesting_in_a_json_lines_trace(tmp_path, capsys):
    good = json.dumps(_record())
    deep = json.dumps(_record(trial=1))[:-1] + ', "x": ' + "[" * DEEP + "]" * DEEP + "}"
    err = _imports(tmp_path, capsys, _trace(tmp_path, good + "\n" + deep + "\n"), "openai-chat")
    assert "line 2: not valid JSON (" in err and "depth" in err


def test_deep_nesting_in_a_tau_bench_array(tmp_path, capsys):
    text = '[{"task_id": 0, "trial": 0, "reward": 1, "traj": ' + "[" * DEEP + "]" * DEEP + "}]"
    err = _imports(tmp_path, capsys, _trace(tmp_path, text, "runs.json"), "tau-bench")
    assert "not valid JSON (" in err and "line 1" in err


def test_an_integer_of_10_to_the_30_in_a_trace(tmp_path, capsys):
    text = json.dumps(_record())[:-1].replace('"task_id": 3', '"task_id": ' + "1" + "0" * 30)
    err = _imports(tmp_path, capsys, _trace(tmp_path, text + "}\n"), "openai-chat")
    assert "task_id: must be an integer from 0 to 9,007,199,254,740,992, got 1e+30" in err


def test_an_integer_just_past_64_bits_in_a_trace(tmp_path, capsys):
    text = json.dumps(_record(trial=2**64 - 1))
    err = _imports(tmp_path, capsys, _trace(tmp_path, text + "\n"), "openai-chat")
    assert "trial: must be an integer from 0 to 9,007,199,254,740,992" in err


def test_a_5000_digit_integer_in_a_trace(tmp_path, capsys):
    text = json.dumps(_record())[:-1] + ', "x": ' + "9" * 5000 + "}"
    err = _imports(tmp_path, capsys, _trace(tmp_path, text + "\n"), "openai-chat")
    assert "line 1: not valid JSON (" in err


def test_a_5000_digit_integer_in_a_tool_call(tmp_path, capsys):
    record = _record()
    record["messages"][2]["tool_calls"][0]["function"]["arguments"] = {"n": 1}
    text = json.dumps(record).replace('{"n": 1}', '{"n": ' + "7" * 5000 + "}")
    err = _imports(tmp_path, capsys, _trace(tmp_path, text + "\n"), "openai-chat")
    assert "line 1: not valid JSON (" in err


def test_tokens_1e308_in_a_simulated_step(tmp_path, capsys, reference_run):
    run = tmp_path / "run"
    shutil.copytree(reference_run, run)
    lines = (run / "steps.jsonl").read_text().splitlines(keepends=True)
    row = json.loads(lines[4])
    row["tokens"] = 1e308
    lines[4] = json.dumps(row) + "\n"
    (run / "steps.jsonl").write_text("".join(lines))
    for argv in (["replay", run, "--laws", "calls:3"], ["advise", run], ["export", run]):
        status, _, err = cli(argv, capsys)
        assert status == 2 and err.count("\n") == 1, err
        assert "steps.jsonl:5: field 'tokens': expected a whole number, got 1e+308" in err
    tally(KIND, inputs_tried=3, answered_cleanly=3)


@pytest.mark.parametrize(
    ("field", "command"), [("time", "export"), ("delta_task", "report"), ("progress", "report")]
)
def test_1e308_in_a_simulated_steps_number(tmp_path, capsys, reference_run, field, command):
    # before: export exit 70 (OverflowError), report exit 70 or figures of overflowed numbers
    run = tmp_path / "run"
    shutil.copytree(reference_run, run)
    lines = (run / "steps.jsonl").read_text().splitlines(keepends=True)
    row = json.loads(lines[2])
    row[field] = 1e308
    lines[2] = json.dumps(row) + "\n"
    (run / "steps.jsonl").write_text("".join(lines))
    status, _, err = cli([command, run], capsys)
    assert status == 2 and err.count("\n") == 1, err
    assert f"steps.jsonl:3: field '{field}': 1e+308 is out of range" in err
    tally(KIND, inputs_tried=1, answered_cleanly=1)


@pytest.mark.parametrize(
    "line",
    ['{"x": 1}', '{"recorded_controller": "pid"}', '{"episode": [], "recorded_controller": 3}'],
)
def test_a_damaged_replay_file_read_back_by_report(tmp_path, capsys, reference_run, line):
    run = tmp_path / "run"
    shutil.copytree(reference_run, run)
    assert cli(["replay", run, "--controller", "threshold"], capsys)[0] == 0
    with open(run / "replay_threshold.jsonl", "a", encoding="utf-8") as f:
        f.write(line + "\n")
    status, _, err = cli(["report", run], capsys)
    assert status == 2 and err.count("\n") == 1, err
    assert f"{run / 'replay_threshold.jsonl'}:31: field " in err
    tally(KIND, inputs_tried=1, answered_cleanly=1)


@pytest.mark.parametrize(
    "index",
    [
        "[1, 2]",
        '{"figures": [1, {"a": 2}], "options": {"controller": null, "episode": null}}',
        '{"figures": ["convergence"], "options": {"controller": null, "episode": null}, '
        '"captions": [1]}',
        '{"figures": ["convergence"], "options": {"controller": null, "episode": null}, '
        '"raster": "x"}',
        '{"figures": ["../../x"], "options": {"controller": null, "episode": null}}',
        "{not json",
    ],
)
def test_a_damaged_figures_json_read_back_by_report(tmp_path, capsys, reference_run, index):
    run = tmp_path / "run"
    shutil.copytree(reference_run, run)
    assert cli(["report", run], capsys)[0] == 0
    (run / "figures" / "figures.json").write_text(index)
    for svg in (run / "figures").glob("*.svg"):
        svg.touch()  # newer than the run files: the report would reuse them
    status, _, err = cli(["report", run], capsys)
    assert status == 0, err  # a damaged index is not trusted: the figures are drawn again
    index_now = json.loads((run / "figures" / "figures.json").read_text())
    assert all(isinstance(s, str) and "/" not in s for s in index_now["figures"])
    tally(KIND, inputs_tried=1, answered_cleanly=1)


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("{a = 1, b = 2}", "output_limits must be a (low, high) pair such as [0.0, 1.0], got {"),
        ("[[1], 2]", "output_limits must be a pair of numbers, got [[1], 2]"),
    ],
)
def test_output_limits_that_are_not_a_pair(tmp_path, capsys, value, problem):
    text = (EXPERIMENTS / "flight_booking.toml").read_text(encoding="utf-8")
    spec = tmp_path / "limits.toml"
    spec.write_text(text + f"\n[controller.params]\noutput_limits = {value}\n", encoding="utf-8")
    argv = ["run", spec, "--episodes", "2", "--workers", "1", "--out", tmp_path / "o"]
    status, _, err = cli(argv, capsys)
    assert status == 2 and err.count("\n") == 1, err
    assert problem in err
    tally(KIND, inputs_tried=1, answered_cleanly=1)
