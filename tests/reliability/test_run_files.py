"""Corrupted or unusual run directories: every reader gives typed rows or one clean line.

A hypothesis fuzz of every JSON-lines reader (episodes, steps, calls, any
other file), then ``plot``, ``report``, ``calibrate`` and ``replay`` on runs
whose files hold a garbage line, a JSON list, wrong types, or are missing.
"""

from __future__ import annotations

import shutil

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from opar_sim.rundir import RunDirError, rows
from tests.reliability.conftest import cli, tally

_json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=6),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=10,
)
_fields = st.sampled_from(
    [
        "episode",
        "step",
        "time",
        "progress",
        "controller",
        "success",
        "steps",
        "phase",
        "terms",
        "trial",
        "attempt",
        "delta_task",
        "x",
    ]
)
_rows = st.dictionaries(_fields, _json_values, max_size=8)


def _line(value: object) -> bytes:
    import json

    return json.dumps(value).encode() + b"\n"


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.sampled_from(["episodes.jsonl", "steps.jsonl", "calls.jsonl", "other.jsonl"]),
    st.lists(
        st.one_of(_rows.map(_line), _json_values.map(_line), st.binary(max_size=30)), max_size=6
    ),
)
def test_every_jsonl_reader_gives_rows_or_the_clean_error(tmp_path, name, lines):
    path = tmp_path / name
    path.write_bytes(b"".join(lines))
    try:
        for row in rows(path):
            assert isinstance(row, dict)
            if name in ("episodes.jsonl", "steps.jsonl"):  # the typed fields readers use
                assert isinstance(row["episode"], int) and not isinstance(row["episode"], bool)
    except RunDirError as exc:
        message = str(exc)
        assert message.startswith(f"{path}:") and "\n" not in message
    tally("run directories", inputs_tried=1, answered_cleanly=1)


DAMAGE = {
    "garbage": lambda lines: [*lines[:3], b"xx{garbage\n", *lines[3:]],
    "list": lambda lines: [*lines[:3], b"[1, 2]\n", *lines[3:]],
    "wrong type": lambda lines: (
        [*lines[:3], lines[3].replace(b'"episode":', b'"episode":"a","x":'), *lines[4:]]
    ),
}
MESSAGES = {
    "garbage": ":4: not JSON",
    "list": ":4: not a JSON object",
    "wrong type": ":4: field 'episode': expected a whole number, got 'a'",
}


@pytest.mark.parametrize("file", ["episodes.jsonl", "steps.jsonl"])
@pytest.mark.parametrize("damage", list(DAMAGE))
@pytest.mark.parametrize("command", ["plot", "report", "calibrate", "replay"])
def test_analysis_commands_on_a_damaged_run(tmp_path, capsys, reference_run, command, damage, file):
    run = tmp_path / "run"
    shutil.copytree(reference_run, run)
    lines = (run / file).read_bytes().splitlines(keepends=True)
    (run / file).write_bytes(b"".join(DAMAGE[damage](lines)))
    argv = [command, run]
    if command == "replay":
        argv += ["--controller", "threshold"]
    if command == "calibrate":
        argv += ["--episodes", "5", "--direct"]
    status, _, err = cli(argv, capsys)
    assert status == 2
    assert err.startswith(f"opar-sim: error: {run / file}{MESSAGES[damage]}")
    assert err.count("\n") == 1
    tally("run directories", inputs_tried=1, answered_cleanly=1, faults_injected=1)


@pytest.mark.parametrize("command", ["plot", "report", "calibrate", "replay"])
@pytest.mark.parametrize("missing", ["steps.jsonl", "episodes.jsonl", "spec.json"])
def test_analysis_commands_on_a_run_missing_a_file(
    tmp_path, capsys, reference_run, command, missing
):
    run = tmp_path / "run"
    shutil.copytree(reference_run, run)
    (run / missing).unlink()
    argv = [command, run] + (["--controller", "threshold"] if command == "replay" else [])
    argv += ["--episodes", "5", "--direct"] if command == "calibrate" else []
    status, _, err = cli(argv, capsys)
    # plot and report read a run without spec.json (its summary comes from the rows)
    if missing == "spec.json" and command in ("plot", "report"):
        assert status == 0
    else:
        assert status == 2 and err.count("\n") == 1 and err.startswith("opar-sim: error: ")
    tally("run directories", inputs_tried=1, answered_cleanly=1, faults_injected=1)


def test_a_truncated_spec_json_on_resume_is_clean(tmp_path, capsys, reference_run):
    run = tmp_path / "run"
    shutil.copytree(reference_run, run)
    (run / "manifest.jsonl").unlink()  # nothing vouches for the spec: cannot repair
    (run / "spec.json").write_bytes((run / "spec.json").read_bytes()[:200])
    from tests.conftest import EXPERIMENTS

    status, _, err = cli(
        [
            "run",
            EXPERIMENTS / "flight_booking.toml",
            "--episodes",
            "30",
            "--workers",
            "1",
            "--out",
            run,
            "--resume",
        ],
        capsys,
    )
    assert status == 2 and err.count("\n") == 1
    assert err.startswith(f"opar-sim: error: --resume: {run / 'spec.json'} is damaged (not valid")
    assert err.endswith(
        "and no manifest confirms the spec: cannot repair; start the run again in another "
        "directory\n"
    )
    tally("run directories", inputs_tried=1, answered_cleanly=1, faults_injected=1)
