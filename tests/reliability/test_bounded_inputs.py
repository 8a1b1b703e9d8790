"""Inputs that hang or explode are bounded: linear imports, a bounded advise, only regular files.

Issue 31's attack: ``traces import`` was quadratic in a run's length (100,000 turns: 110 s;
40,000 calls in one turn: 47 s), ``advise`` O(300 x B^2) (3 runs of 300 turns: over 200 s;
``--budget 1000000000`` allocated until MemoryError), a FIFO or a link to ``/dev/zero``
given as a trace or a run file was read without limit, and ``calibrate --cell-episodes``,
``--folds`` and ``tune``/``shootout --trials`` took any size.  Each case is one test here.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from opar_sim.rundir import RunDirError, read_jsonl
from opar_sim.traces import TraceFormatError, import_traces, parse_file
from tests.conftest import EXPERIMENTS
from tests.reliability.conftest import cli, tally
from tests.tau_bench_data import tau_bench_file

SPEC = EXPERIMENTS / "flight_booking.toml"
KIND = "inputs that hang or explode"


def long_run(
    turns: int,
    calls: int = 1,
    *,
    task_id: int = 0,
    reward: float = 1.0,
    reply_ids: bool = True,
) -> dict[str, Any]:
    """One openai-chat record: ``turns`` assistant turns of ``calls`` tool calls each.

    ``reply_ids=False`` leaves the tool replies without ``tool_call_id`` (each call's
    answer is then found by order, the importer's slow case before it was linear).
    """
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "policy"},
        {"role": "user", "content": "help me"},
    ]
    for t in range(turns):
        ids = [f"c{t}_{j}" for j in range(calls)]
        messages.append(
            {
                "role": "assistant",
                "content": "checking",
                "tool_calls": [
                    {"id": i, "function": {"name": "get_user", "arguments": f'{{"u": {t % 7}}}'}}
                    for i in ids
                ],
            }
        )
        for i in ids:
            reply: dict[str, Any] = {"role": "tool", "content": "{}"}
            if reply_ids:
                reply["tool_call_id"] = i
            messages.append(reply)
    messages.append({"role": "assistant", "content": "done"})
    return {"task_id": task_id, "trial": 0, "reward": reward, "messages": messages}


def write_runs(path: Path, records: list[dict[str, Any]]) -> Path:
    """``records`` as a JSON-lines file of openai-chat runs."""
    with open(path, "w", encoding="utf-8") as f:
        for record in records:
            f.write(json.dumps(record) + "\n")
    return path


def _import_cpu(tmp_path: Path, name: str, record: dict[str, Any]) -> float:
    source = write_runs(tmp_path / f"{name}.jsonl", [record])
    start = time.process_time()
    import_traces(source, "openai-chat", tmp_path / name)
    return time.process_time() - start


def test_import_of_a_100000_turn_run_takes_seconds(tmp_path):
    # quadratic, it took 110 s; linear, about 3 s of CPU here (20 s is the bound)
    cpu = _import_cpu(tmp_path, "t100k", long_run(100_000))
    assert cpu < 20, cpu
    steps = sum(1 for _ in read_jsonl(tmp_path / "t100k" / "steps.jsonl"))
    assert steps == 100_001
    tally(KIND, inputs_tried=1, answered_cleanly=1)


def test_import_is_linear_in_the_calls_of_one_turn(tmp_path):
    # 40,000 calls in one turn whose replies carry no id: each answer is found by order
    small = _import_cpu(tmp_path, "c10k", long_run(1, 10_000, reply_ids=False))
    large = _import_cpu(tmp_path, "c40k", long_run(1, 40_000, reply_ids=False))
    assert large < 8 * small + 0.5, (small, large)
    assert large < 8.0, large
    tally(KIND, inputs_tried=1, answered_cleanly=1)


def test_advise_on_three_runs_of_2000_turns_is_quick(tmp_path, capsys):
    runs = [long_run(2000, task_id=k, reward=1.0 if k < 2 else 0.0) for k in range(3)]
    source = write_runs(tmp_path / "r3.jsonl", runs)
    import_traces(source, "openai-chat", tmp_path / "r3")
    start = time.process_time()
    status, out, err = cli(["advise", tmp_path / "r3", "--detail"], capsys)
    assert status == 0, err
    assert time.process_time() - start < 20
    assert "restart at a cutoff vs continue (budget 2001 turns)" in out
    advice = json.loads((tmp_path / "r3" / "advise.json").read_text())
    assert advice["restarts"]["budget"] == 2001 and len(advice["steps"]) <= 2001
    tally(KIND, inputs_tried=1, answered_cleanly=1)


@pytest.fixture(scope="module")
def tau(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("tau") / "run"
    import_traces(tau_bench_file(), "tau-bench", out)
    return out


def test_advise_budget_ceiling_is_checked_before_anything_is_allocated(tau, capsys):
    start = time.process_time()
    status, _, err = cli(["advise", tau, "--budget", "1000000000"], capsys)
    assert time.process_time() - start < 5
    assert status == 2 and err.count("\n") == 1
    assert "--budget: must be at most 1,000,000, got 1,000,000,000" in err
    tally(KIND, inputs_tried=1, answered_cleanly=1)


def test_advise_at_the_budget_ceiling_finishes(tau, capsys):
    start = time.process_time()
    status, out, err = cli(["advise", tau, "--budget", "1000000", "--detail"], capsys)
    assert status == 0, err
    assert time.process_time() - start < 20
    assert "budget 1000000 turns" in out
    tally(KIND, inputs_tried=1, answered_cleanly=1)


def _in_thread(argv: list[Any], capsys: pytest.CaptureFixture[str], fifo: Path | None = None):
    """``cli(argv)`` with a 20 s guard: a reader blocked on a FIFO is released and fails."""
    result: list[tuple[int, str, str]] = []
    worker = threading.Thread(target=lambda: result.append(cli(argv, capsys)), daemon=True)
    worker.start()
    worker.join(20)
    if worker.is_alive() and fifo is not None:
        with open(fifo, "wb"):  # a writer that closes at once: the blocked reader sees EOF
            pass
        worker.join(5)
        pytest.fail(f"{argv[0]} blocked on the FIFO {fifo}")
    assert result, "the command did not finish"
    return result[0]


def test_a_fifo_given_as_a_trace_is_refused(tmp_path, capsys):
    fifo = tmp_path / "runs.jsonl"
    os.mkfifo(fifo)
    argv = ["traces", "import", fifo, "--format", "openai-chat", "--out", tmp_path / "o"]
    status, _, err = _in_thread(argv, capsys, fifo)
    assert status == 2 and err.count("\n") == 1
    assert f"{fifo}: not a regular file (a FIFO)" in err
    assert not (tmp_path / "o").exists()
    tally(KIND, inputs_tried=1, answered_cleanly=1)


def test_a_link_to_dev_zero_given_as_a_trace_is_refused(tmp_path, capsys):
    link = tmp_path / "runs.json"
    os.symlink("/dev/zero", link)
    with pytest.raises(TraceFormatError, match="not a regular file"):
        parse_file(link, "tau-bench")
    argv = ["traces", "import", link, "--format", "tau-bench", "--out", tmp_path / "o"]
    status, _, err = _in_thread(argv, capsys)
    assert status == 2 and err.count("\n") == 1
    assert f"{link}: not a regular file (a character device)" in err
    tally(KIND, inputs_tried=1, answered_cleanly=1)


def _planted(tau: Path, tmp_path: Path, name: str, kind: str) -> Path:
    run = tmp_path / "run"
    shutil.copytree(tau, run)
    (run / name).unlink(missing_ok=True)
    if kind == "fifo":
        os.mkfifo(run / name)
    else:
        os.symlink("/dev/zero", run / name)
    return run


@pytest.mark.parametrize("kind", ["fifo", "zero"])
@pytest.mark.parametrize(
    ("name", "argv"),
    [
        ("steps.jsonl", ["replay", "RUN", "--laws", "calls:10"]),
        ("episodes.jsonl", ["advise", "RUN"]),
        ("steps.jsonl", ["traces", "compare", "RUN"]),
    ],
)
def test_a_run_file_that_is_a_fifo_or_dev_zero_is_refused(tau, tmp_path, capsys, kind, name, argv):
    run = _planted(tau, tmp_path, name, kind)
    words = [run if a == "RUN" else a for a in argv]
    status, _, err = _in_thread(words, capsys, run / name if kind == "fifo" else None)
    assert status == 2 and err.count("\n") == 1, err
    what = "a FIFO" if kind == "fifo" else "a character device"
    assert f"{run / name}: not a regular file ({what})" in err
    tally(KIND, inputs_tried=1, answered_cleanly=1)


def test_a_replay_file_that_is_a_fifo_is_refused_by_the_report(tmp_path, capsys, reference_run):
    run = tmp_path / "run"
    shutil.copytree(reference_run, run)
    os.mkfifo(run / "replay_threshold.jsonl")
    status, _, err = _in_thread(["report", run], capsys, run / "replay_threshold.jsonl")
    assert status == 2 and err.count("\n") == 1
    assert "replay_threshold.jsonl: not a regular file (a FIFO)" in err
    tally(KIND, inputs_tried=1, answered_cleanly=1)


def test_a_spec_json_that_is_a_fifo_is_refused_on_resume(tmp_path, capsys, reference_run):
    run = tmp_path / "run"
    shutil.copytree(reference_run, run)
    (run / "spec.json").unlink()
    os.mkfifo(run / "spec.json")
    argv = ["run", SPEC, "--episodes", "30", "--workers", "1", "--out", run, "--resume"]
    status, _, err = _in_thread(argv, capsys, run / "spec.json")
    assert status == 2 and err.count("\n") == 1
    assert "spec.json: not a regular file (a FIFO)" in err
    tally(KIND, inputs_tried=1, answered_cleanly=1)


def test_a_file_over_the_size_ceiling_names_how_to_raise_it(tmp_path, capsys, monkeypatch):
    source = write_runs(tmp_path / "big.jsonl", [long_run(5000)])
    monkeypatch.setenv("OPAR_SIM_MAX_INPUT_MB", "1")
    argv = ["traces", "import", source, "--format", "openai-chat", "--out", tmp_path / "o"]
    status, _, err = cli(argv, capsys)
    assert status == 2 and err.count("\n") == 1
    assert f"{source}: " in err and "over the 1 MB ceiling" in err
    assert "set OPAR_SIM_MAX_INPUT_MB to raise it" in err
    monkeypatch.setenv("OPAR_SIM_MAX_INPUT_MB", "64")
    assert cli(argv, capsys)[0] == 0
    with pytest.raises(RunDirError, match="OPAR_SIM_MAX_INPUT_MB"):
        monkeypatch.setenv("OPAR_SIM_MAX_INPUT_MB", "0.001")
        list(read_jsonl(tmp_path / "o" / "steps.jsonl"))
    tally(KIND, inputs_tried=2, answered_cleanly=2)


CEILINGS = [
    (["calibrate", "RUN", "--cell-episodes", "1000000000"], "--cell-episodes", "100,000"),
    (["calibrate", "RUN", "--folds", "1000000000"], "--folds", "1,000"),
    (["calibrate", "RUN", "--folds", "9" * 30], "--folds", "1,000"),
    (["tune", SPEC, "--trials", "1000000000"], "--trials", "10,000"),
    (["shootout", SPEC, "--trials-per-dim", "1000000000"], "--trials-per-dim", "10,000"),
    (["shootout", SPEC, "--replicates", "1000000000"], "--replicates", "20"),
]


@pytest.mark.parametrize(("argv", "flag", "ceiling"), CEILINGS)
def test_sizes_over_their_ceiling_are_refused_before_anything_runs(
    tau, tmp_path, capsys, argv, flag, ceiling
):
    words = [tau if a == "RUN" else a for a in argv] + ["--out", tmp_path / "o"]
    if argv[0] == "calibrate":
        words = words[:-2]
    start = time.process_time()
    status, _, err = cli(words, capsys)
    assert time.process_time() - start < 5
    assert status == 2 and err.count("\n") == 1, err
    assert f"argument {flag}: must be at most {ceiling}, got " in err
    assert not (tmp_path / "o").exists()
    tally(KIND, inputs_tried=1, answered_cleanly=1)


def test_1e9_is_not_an_integer_count(tau, capsys):
    for argv in (
        ["calibrate", tau, "--cell-episodes", "1e9"],
        ["calibrate", tau, "--folds", "1e9"],
        ["tune", SPEC, "--trials", "1e9"],
        ["shootout", SPEC, "--trials-per-dim", "1e9"],
    ):
        status, _, err = cli(argv, capsys)
        assert status == 2 and "expected an integer, got '1e9'" in err and err.count("\n") == 1
    tally(KIND, inputs_tried=4, answered_cleanly=4)
