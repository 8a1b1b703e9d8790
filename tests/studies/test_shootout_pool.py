"""The shoot-out on a process pool (each replicate one job) gives the in-process result exactly.

A replicate's search, its batch screening and its SimPy rows do not depend on the process
they run in; the pool's workers tick once per trial and stop at their next tick when asked.
"""

from __future__ import annotations

import pytest

from opar_sim.running import executors
from opar_sim.running.executors import (
    ExecutorConfig,
    Reports,
    StoppableExecutor,
    Stopped,
    tick,
)
from opar_sim.spec.build import load_spec
from opar_sim.studies.contender import Budget
from opar_sim.studies.shootout import ShootoutBudget, plan_shootout
from opar_sim.studies.shootout_pool import ReplicateJob
from tests.conftest import ROOT

SPEC = ROOT / "experiments" / "research_qa_faults.toml"
BUDGET = ShootoutBudget(trials_per_dim=1, train_episodes=30, holdout_episodes=60, replicates=2)


def test_a_pooled_shootout_equals_the_in_process_one_to_the_bit():
    plan = plan_shootout(
        load_spec(SPEC), BUDGET, controllers=["pid", "open_loop"], engine="batch", finalists=2
    )
    ticks: list[str] = []
    pooled = plan.run(ExecutorConfig("process", 2), lambda: ticks.append("pool")).to_dict()
    here = plan.run(ExecutorConfig("serial"), lambda: ticks.append("here")).to_dict()
    assert pooled.pop("wall_seconds") > 0 and here.pop("wall_seconds") > 0
    assert pooled == here
    # one tick per trial of every replicate of every law, in either path
    assert ticks.count("pool") == ticks.count("here") == plan.total_trials == 2 * (8 + 1)


def test_a_replicate_job_costs_its_simpy_episodes_and_a_tenth_of_its_screened_ones():
    plan = plan_shootout(
        load_spec(SPEC), BUDGET, controllers=["pid", "open_loop"], engine="batch", finalists=2
    )
    pid, open_loop = (
        ReplicateJob(
            c.name,
            c.data,
            c.space,
            c.screened,
            plan.objective,
            Budget(BUDGET.trials(len(c.space)), 30, 60),
            2,
            2,
        )
        for c in plan.contenders
    )
    # screened trials count a tenth; two finalists and the held-out episodes in full
    assert pid.cost == pytest.approx(8 * 30 * 0.1 + 2 * 30 + 60)
    assert open_loop.cost == pytest.approx(1 * 30 * 0.1 + 1 * 30 + 60)


def test_a_tick_counts_and_a_stop_request_ends_the_job(monkeypatch):
    tick()  # outside a pool's worker: nothing to tell
    reports = Reports.create()
    monkeypatch.setattr(executors, "_REPORTS", reports)
    tick()
    tick()
    assert reports.ticks == 2
    reports.stop.set()
    with pytest.raises(Stopped):
        tick()
    assert reports.ticks == 2


def test_a_stop_request_ends_a_job_at_its_next_simpy_chunk(monkeypatch):
    reports = Reports.create()
    monkeypatch.setattr(executors, "_REPORTS", reports)
    executor = StoppableExecutor()
    assert executor.submit(int, "7").result() == 7
    reports.stop.set()
    with pytest.raises(Stopped):
        executor.submit(int, "7")
