"""The executor seam: a run too small for a pool runs serially, and says so."""

from __future__ import annotations

import subprocess
import sys
from contextlib import contextmanager

import pytest

from opar_sim.cli.commands import run_cmd
from opar_sim.cli.main import main
from opar_sim.running.executors import (
    POOL_MIN_EPISODES,
    ExecutorConfig,
    SerialExecutor,
    fit_to_size,
)
from tests.conftest import SPEC


def test_the_default_pool_becomes_serial_below_the_threshold_and_stays_above() -> None:
    small, note = fit_to_size(ExecutorConfig("process"), POOL_MIN_EPISODES - 1)
    assert small == ExecutorConfig("serial", 1)
    assert note is not None and f"{POOL_MIN_EPISODES - 1:,} episodes run serially" in note
    assert fit_to_size(ExecutorConfig("process"), POOL_MIN_EPISODES) == (
        ExecutorConfig("process"),
        None,
    )


@pytest.mark.parametrize(
    "asked",
    [ExecutorConfig("process", 2), ExecutorConfig("dask", 2), ExecutorConfig("serial", 1)],
)
def test_an_explicit_choice_is_kept_whatever_the_size(asked: ExecutorConfig) -> None:
    assert fit_to_size(asked, 1) == (asked, None)


def _record(monkeypatch: pytest.MonkeyPatch) -> list[ExecutorConfig]:
    opened: list[ExecutorConfig] = []

    @contextmanager
    def fake(config: ExecutorConfig):
        opened.append(config)
        yield SerialExecutor()

    monkeypatch.setattr(run_cmd, "open_executor", fake)
    return opened


def test_a_small_run_picks_serial_by_itself_and_says_so(tmp_path, capsys, monkeypatch) -> None:
    opened = _record(monkeypatch)
    assert main(["run", SPEC, "--episodes", "30", "--out", str(tmp_path / "r")]) == 0
    assert opened == [ExecutorConfig("serial", 1)]
    assert "run serially" not in capsys.readouterr().out  # the result first: no executor note
    argv = ["run", SPEC, "--episodes", "30", "--out", str(tmp_path / "v"), "--verbose"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "30 episodes run serially" in out and "--workers N" in out


def test_workers_asked_for_keep_the_pool_and_print_no_note(tmp_path, capsys, monkeypatch) -> None:
    opened = _record(monkeypatch)
    argv = ["run", SPEC, "--episodes", "5", "--workers", "2", "--out", str(tmp_path / "r")]
    assert main(argv) == 0
    assert opened == [ExecutorConfig("process", 2)]
    assert "run serially" not in capsys.readouterr().out


_LOUD_WORKER = """
import logging
from opar_sim.running.executors import ExecutorConfig, open_executor

def shout(x):
    logging.getLogger("distributed.worker").error("a worker's log line %d", x)
    return x

if __name__ == "__main__":
    with open_executor(ExecutorConfig("dask", 1)) as pool:
        print(sum(pool.map(shout, range(3))))
"""


def test_a_local_dask_workers_log_lines_stay_off_the_terminal(tmp_path) -> None:
    # a heartbeat racing the cluster's close logged a traceback at ERROR in a worker
    script = tmp_path / "loud.py"
    script.write_text(_LOUD_WORKER)
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.strip() == "3"  # the tasks ran in the worker and came back
    assert "a worker's log line" not in done.stderr + done.stdout
