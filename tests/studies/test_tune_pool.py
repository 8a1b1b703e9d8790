"""A screened tuning on a process pool (each replicate one job) gives the in-process result.

A replicate's search, its batch screening and its finalists' SimPy rows do not depend on
the process they run in; each finished trial reaches the parent's ``on_trial`` once,
whether its message arrives while the pool runs or only with its replicate's result.
"""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from opar_sim.engines import batch
from opar_sim.running import executors
from opar_sim.running.executors import ExecutorConfig, Reports, SerialExecutor, send
from opar_sim.spec.build import parse_spec
from opar_sim.studies.finalists import Trial
from opar_sim.studies.tune import TuneBudget, plan_tuning, replicate_storages
from opar_sim.studies.tune_pool import ReplicateJob, run_pooled
from tests.conftest import ROOT

SPEC = {
    "name": "pooled_tune",
    "seed": 3,
    "task": {"name": "flight_booking"},
    "controller": {"name": "pid"},
    "limits": {"max_steps": 12},
    "tune": {
        "trials": 4,
        "train_episodes": 20,
        "holdout_episodes": 40,
        "space": {
            "controller.params.kp": {"low": 0.2, "high": 3.0, "log": True},
            "controller.params.replan_threshold": {"low": 0.2, "high": 1.5},
        },
    },
}
BUDGET = TuneBudget(replicates=3, confirm_episodes=40)


def _plan():
    return plan_tuning(parse_spec(SPEC), BUDGET, engine="batch", finalists=2)


def _key(trial: Trial) -> tuple[int, float]:
    return trial.number, trial.score


def test_a_pooled_screened_tuning_equals_the_in_process_one_to_the_bit(monkeypatch):
    plan = _plan()
    pooled_trials: list[Trial] = []
    here_trials: list[Trial] = []
    runs: list[int] = []  # the batch engine's runs in this process (the parent)
    engine_run = batch.run_batch
    monkeypatch.setattr(batch, "run_batch", lambda *a, **k: runs.append(1) or engine_run(*a, **k))
    pooled = plan.run(ExecutorConfig("process", 2), on_trial=pooled_trials.append)
    assert len(runs) == 1  # the warming run: every trial was screened in a worker
    here = plan.run(ExecutorConfig("serial"), on_trial=here_trials.append)
    assert len(runs) == 1 + 3 * 4
    assert pooled.to_dict() == here.to_dict()
    # every trial of every replicate once, in either path (the pool's interleaved)
    assert len(pooled_trials) == len(here_trials) == 3 * 4
    assert sorted(map(_key, pooled_trials)) == sorted(map(_key, here_trials))


def test_the_workers_keep_each_replicates_journal_and_resuming_reads_it_back(tmp_path):
    plan = _plan()
    first = plan.run(
        ExecutorConfig("process", 2), storages=replicate_storages(tmp_path, plan, False)
    )
    for r in range(3):  # written by the worker that ran replicate r
        journal = (tmp_path / f"replicate_{r}" / "optuna.journal").read_text().splitlines()
        complete = [op for op in map(json.loads, journal) if op.get("state") == 1]
        assert len(complete) == 4  # each trial marked complete, once
    again = plan.run(
        ExecutorConfig("serial"), storages=replicate_storages(tmp_path, plan, True), resume=True
    )
    assert again.to_dict() == first.to_dict()


def test_a_trial_whose_message_never_came_is_given_with_its_replicate():
    # a serial "pool": the jobs run here, with no report channel, so no message is sent
    plan = _plan()
    jobs = [
        ReplicateJob(plan.data, plan.settings, r, t, s, None, False, 2, 1)
        for r, (t, s) in enumerate(plan.seeds)
    ]
    given: list[Trial] = []
    replicates = run_pooled(jobs, SerialExecutor(), Reports.create(), given.append)
    assert [_key(t) for t in given] == [_key(t) for rep in replicates for t in rep.trials]
    assert len(given) == 12


def test_what_a_job_sends_reaches_the_parent_once(monkeypatch):
    send(("ignored", 0))  # outside a pool's worker: nothing to tell
    reports = Reports.create()
    monkeypatch.setattr(executors, "_REPORTS", reports)
    send((0, "first"))
    send((1, "second"))
    found: list[object] = []
    deadline = time.monotonic() + 10
    while len(found) < 2 and time.monotonic() < deadline:  # a queue's feeder thread writes
        found += reports.received()
    assert found == [(0, "first"), (1, "second")]
    assert reports.ticks == 2  # each message is a tick too
    assert reports.received() == []


POOLED_TUNE = """
name = "pooled_interrupt"
[task]
name = "flight_booking"
[controller]
name = "pid"
[tune]
trials = 25
train_episodes = 200
holdout_episodes = 100
[tune.space]
"controller.params.kp" = { low = 0.2, high = 3.0, log = true }
"""


def _complete(out: Path) -> int:
    found = 0
    for journal in out.glob("replicate_*/optuna.journal"):
        for line in journal.read_text().splitlines():
            with contextlib.suppress(ValueError):  # a line being written
                found += json.loads(line).get("state") == 1
    return found


def _tuned_and_started(
    tmp_path: Path, trials: int, **popen: Any
) -> tuple[list[str], subprocess.Popen[Any]]:
    """A whole pooled tuning in ``whole``; another started into ``cut``, 10 trials in."""
    spec = tmp_path / "t.toml"
    spec.write_text(POOLED_TUNE.replace("trials = 25", f"trials = {trials}"))
    argv = [sys.executable, "-m", "opar_sim.cli", "tune", str(spec), "--engine", "batch"]
    argv += ["--replicates", "2", "--workers", "2"]
    whole, cut = tmp_path / "whole", tmp_path / "cut"
    subprocess.run([*argv, "--out", str(whole)], cwd=ROOT, check=True, capture_output=True)
    proc = subprocess.Popen([*argv, "--out", str(cut)], cwd=ROOT, **popen)
    deadline = time.monotonic() + 120
    while proc.poll() is None and _complete(cut) < 10 and time.monotonic() < deadline:
        time.sleep(0.01)
    return argv, proc


def _resumes_to_the_whole_files(argv: list[str], tmp_path: Path) -> None:
    cut, whole = tmp_path / "cut", tmp_path / "whole"
    resumed = [*argv, "--out", str(cut), "--resume"]
    subprocess.run(resumed, cwd=ROOT, check=True, capture_output=True)
    for name in ("tune.json", "trials.jsonl", "best.toml"):
        assert (cut / name).read_bytes() == (whole / name).read_bytes(), name


@pytest.mark.slow  # three tunings in subprocesses, about 20 s
def test_a_pooled_tuning_stopped_by_ctrl_c_resumes_to_the_same_files(tmp_path):
    argv, proc = _tuned_and_started(
        tmp_path,
        25,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # as in a terminal
    )
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    cut = tmp_path / "cut"
    assert proc.returncode == 130, "the tuning finished before Ctrl-C"
    assert err.strip().endswith(f"interrupted; episodes kept: rerun with --resume --out {cut}")
    assert _complete(cut) >= 10  # the workers' journals kept what they had finished
    _resumes_to_the_whole_files(argv, tmp_path)


def _sizes(out: Path) -> list[int]:
    return [p.stat().st_size for p in sorted(out.glob("replicate_*/optuna.journal"))]


@pytest.mark.slow  # three tunings in subprocesses, about 20 s
def test_workers_whose_parent_was_killed_stop_and_the_tuning_resumes(tmp_path):
    # SIGKILL asks the workers nothing: orphaned, they stop at their next trial instead of
    # running their replicate to its end, appending while --resume reads the journal
    argv, proc = _tuned_and_started(tmp_path, 60, stdout=subprocess.DEVNULL)
    proc.kill()
    proc.wait(timeout=30)
    cut = tmp_path / "cut"
    assert _complete(cut) < 120, "the tuning's trials ended before the kill"
    time.sleep(2)  # a worker stops at its next trial (a few ms of batch episodes)
    before = _sizes(cut)
    time.sleep(2)
    assert _sizes(cut) == before  # nothing appends any more
    assert _complete(cut) < 120
    _resumes_to_the_whole_files(argv, tmp_path)
