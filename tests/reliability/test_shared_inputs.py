"""Inputs that would exhaust the machine are refused or capped before anything runs (issue 31)."""

from __future__ import annotations

import concurrent.futures
import time

import opar_sim.running.executors as executors
from opar_sim.running.executors import ExecutorConfig, capped_workers, cores
from tests.conftest import EXPERIMENTS
from tests.reliability.conftest import cli, tally

SPEC = EXPERIMENTS / "flight_booking.toml"


def test_workers_10000_starts_at_most_one_process_per_core(tmp_path, capsys, monkeypatch):
    started: list[int] = []
    real = executors.ProcessPoolExecutor

    class Recording(real):  # type: ignore[misc,valid-type]
        def __init__(self, max_workers=None, **kwargs):
            started.append(max_workers)
            super().__init__(max_workers, **kwargs)

    monkeypatch.setattr(executors, "ProcessPoolExecutor", Recording)
    argv = ["run", SPEC, "--episodes", "4", "--workers", "10000", "--out", tmp_path / "r"]
    status, _, err = cli(argv, capsys)
    assert status == 0
    assert f"--workers 10,000: capped at {cores()}" in err
    assert started and all(n <= cores() for n in started)
    tally("inputs that exhaust the machine", inputs_tried=1, answered_cleanly=1)


def test_the_pool_never_outnumbers_the_cores_from_the_api():
    assert ExecutorConfig("process", 10_000).parallelism == cores()
    assert ExecutorConfig("dask", 10_000).parallelism == cores()  # a local cluster
    assert ExecutorConfig("dask", 64, "tcp://scheduler:8786").parallelism == 64  # remote
    assert capped_workers(cores()) == (cores(), None)
    assert capped_workers(None) == (None, None)


def test_a_huge_sweep_grid_is_refused_before_anything_is_built(tmp_path, capsys):
    spec = tmp_path / "huge.toml"
    text = SPEC.read_text(encoding="utf-8")
    text += (
        "\n[sweep]\n"
        '"controller.params.kp" = { start = 0.1, stop = 3.0, num = 1000 }\n'
        '"controller.params.ki" = { start = 0.0, stop = 1.0, num = 1000 }\n'
        '"controller.params.kd" = { start = 0.0, stop = 1.0, num = 1000 }\n'
    )
    spec.write_text(text, encoding="utf-8")
    start = time.process_time()
    status, _, err = cli(["sweep", spec, "--out", tmp_path / "s", "--workers", "1"], capsys)
    assert time.process_time() - start < 5
    assert status == 2 and err.count("\n") == 1
    assert "1,000,000,000 points (1,000 x 1,000 x 1,000), over the ceiling of 10,000" in err
    assert not (tmp_path / "s").exists() or not any((tmp_path / "s").iterdir())
    tally("inputs that exhaust the machine", inputs_tried=1, answered_cleanly=1)


def test_open_executor_uses_the_capped_count(monkeypatch):
    seen: list[int] = []

    class Fake(concurrent.futures.ThreadPoolExecutor):
        def __init__(self, max_workers=None, **kwargs):
            seen.append(max_workers)
            super().__init__(max_workers)

    monkeypatch.setattr(executors, "ProcessPoolExecutor", Fake)
    monkeypatch.setattr(executors, "cores", lambda: 3)
    with executors.open_executor(ExecutorConfig("process", 500)):
        pass
    assert seen == [3]
