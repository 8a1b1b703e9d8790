"""Sweeps: a grid on common seeds, identical bytes on every executor, and resume after a kill."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from opar_sim.cli.main import main
from opar_sim.running.executors import ExecutorConfig, open_executor
from opar_sim.running.runner import run_experiment
from opar_sim.spec.build import load_spec, parse_spec
from opar_sim.spec.edit import sweep_points
from opar_sim.spec.grid import SweepRange
from opar_sim.spec.schema import SpecError

SWEEP = """
name = "tiny_sweep"
episodes = {episodes}
seed = 3
[task]
name = "flight_booking"
[controller]
name = "pid"
[sweep]
"controller.params.kp" = [0.5, 1.5]
"controller.params.kd" = {{ start = 1.0, stop = 16.0, num = 2, log = true }}
"""


def write_spec(tmp_path: Path, episodes: int = 12) -> str:
    path = tmp_path / "sweep.toml"
    path.write_text(SWEEP.format(episodes=episodes))
    return str(path)


def tree(root: Path) -> dict[str, bytes]:
    """Every data file under a sweep directory (figures excluded: they embed no results).

    The manifest is left out: it records the chunks, and chunk sizes follow the
    executor's parallelism.
    """
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.suffix in {".json", ".jsonl"} and p.name != "manifest.jsonl"
    }


def test_ranges_and_grid_order():
    assert SweepRange(start=1, stop=100, num=3, log=True).values() == [1.0, 10.0, 100.0]
    assert SweepRange(start=0, stop=1, num=5).values() == [0.0, 0.25, 0.5, 0.75, 1.0]
    data = {"name": "g", "sweep": {"controller.params.kp": [1, 2], "limits.max_steps": [5, 9]}}
    points = sweep_points(parse_spec(data))
    assert [p.assignment for p, _ in points] == [
        {"controller.params.kp": 1, "limits.max_steps": 5},
        {"controller.params.kp": 1, "limits.max_steps": 9},
        {"controller.params.kp": 2, "limits.max_steps": 5},
        {"controller.params.kp": 2, "limits.max_steps": 9},
    ]
    assert [s.limits.max_steps for _, s in points] == [5, 9, 5, 9]
    assert {s.seed for _, s in points} == {0}  # every point on the same seeds


def test_bad_sweep_values_name_the_path():
    with pytest.raises(SpecError, match=r"controller\.params\.kp = -1"):
        sweep_points(parse_spec({"name": "g", "sweep": {"controller.params.kp": [1, -1]}}))
    with pytest.raises(SpecError, match=r"limits\.colour"):
        sweep_points(parse_spec({"name": "g", "sweep": {"limits.colour": [1]}}))
    with pytest.raises(SpecError, match="log range"):
        parse_spec({"name": "g", "sweep": {"a.b": {"start": 0, "stop": 1, "num": 2, "log": True}}})


def test_same_bytes_on_every_executor(tmp_path):
    spec = load_spec(write_spec(tmp_path, episodes=30))
    point = sweep_points(spec)[1][1]
    outputs = {}
    for config in (
        ExecutorConfig("serial"),
        ExecutorConfig("process", 2),
        ExecutorConfig("dask", 2),
    ):
        out = tmp_path / config.kind
        with open_executor(config) as executor:
            run_experiment(point, out, executor=executor, parallelism=config.parallelism)
        outputs[config.kind] = tree(out)
    assert outputs["serial"] == outputs["process"] == outputs["dask"]


def test_sweep_command_writes_a_directory_per_point(tmp_path, capsys):
    out = tmp_path / "s"
    assert main(["sweep", write_spec(tmp_path), "--workers", "1", "--out", str(out)]) == 0
    points = sorted(p.name for p in out.iterdir() if p.is_dir())
    assert points == ["000_kp=0.5_kd=1", "001_kp=0.5_kd=16", "002_kp=1.5_kd=1", "003_kp=1.5_kd=16"]
    assert (out / "sweep.json").is_file() and (out / "sweep.png").is_file()
    assert "sweep: means per episode" in capsys.readouterr().out


def test_resume_cuts_a_half_written_tail_and_finishes(tmp_path):
    spec = load_spec(write_spec(tmp_path, episodes=20))
    point = sweep_points(spec)[0][1]
    whole, cut = tmp_path / "whole", tmp_path / "cut"
    run_experiment(point, whole)
    run_experiment(point, cut)
    # as if killed mid-write: 7 episodes done, steps of the 8th half on disk
    episodes = (cut / "episodes.jsonl").read_text().splitlines(keepends=True)
    (cut / "episodes.jsonl").write_text("".join(episodes[:7]) + episodes[7][:25])
    steps = (cut / "steps.jsonl").read_text().splitlines(keepends=True)
    keep = [
        s for s in steps if '"episode":7,' in s or any(f'"episode":{i},' in s for i in range(7))
    ]
    (cut / "steps.jsonl").write_text("".join(keep[:-1]) + keep[-1][:40])
    (cut / "summary.json").unlink()
    result = run_experiment(point, cut, resume=True)
    # the manifest keeps whole chunks (2 episodes each here): episodes 6-7 run again
    assert result.resumed_from == 6
    assert tree(cut) == tree(whole)


def test_resume_refuses_a_different_spec(tmp_path):
    spec = load_spec(write_spec(tmp_path, episodes=4))
    first, second = sweep_points(spec)[0][1], sweep_points(spec)[1][1]
    run_experiment(first, tmp_path / "r")
    with pytest.raises(SpecError, match="spec differs"):
        run_experiment(second, tmp_path / "r", resume=True)


def count_lines(root: Path) -> int:
    return sum(p.read_bytes().count(b"\n") for p in root.rglob("episodes.jsonl") if p.is_file())


def test_a_killed_sweep_resumes_to_the_same_files(tmp_path):
    spec_path = write_spec(tmp_path, episodes=150)
    whole, killed = tmp_path / "whole", tmp_path / "killed"
    assert main(["sweep", spec_path, "--workers", "1", "--out", str(whole)]) == 0
    total = count_lines(whole)
    cmd = [sys.executable, "-m", "opar_sim.cli", "sweep", spec_path, "--workers", "1"]
    proc = subprocess.Popen(
        [*cmd, "--out", str(killed)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 120
    while count_lines(killed) < total // 2 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    done_before = count_lines(killed)
    assert 0 < done_before < total, "the sweep was not caught halfway"
    assert main(["sweep", spec_path, "--workers", "1", "--out", str(killed), "--resume"]) == 0
    assert tree(killed) == tree(whole)


def test_run_on_an_existing_dask_scheduler(tmp_path):
    from distributed import LocalCluster

    spec = write_spec(tmp_path, episodes=10)
    with LocalCluster(n_workers=1, threads_per_worker=1, dashboard_address=None) as cluster:
        out = tmp_path / "dask"
        argv = ["sweep", spec, "--scheduler", cluster.scheduler_address, "--out", str(out)]
        assert main(argv) == 0
    serial = tmp_path / "serial"
    assert main(["sweep", spec, "--workers", "1", "--out", str(serial)]) == 0
    assert tree(out) == tree(serial)


def test_an_unreachable_scheduler_is_one_line_and_exit_2(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("opar_sim.running.executors.DASK_CONNECT_TIMEOUT", "1s")
    argv = [
        "run",
        write_spec(tmp_path),
        "--scheduler",
        "tcp://127.0.0.1:9",
        "--out",
        str(tmp_path / "o"),
    ]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "cannot reach the Dask scheduler" in err and len(err.strip().splitlines()) == 1
