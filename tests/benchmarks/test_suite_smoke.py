"""A smoke run of the benchmark suite (``make bench``) at tiny sizes: no timing asserted.

It checks that every figure of issue 14 is measured and printed, in one run,
and that the start-up figures hold (those do not depend on the machine's load).
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

import controllers
from opar_sim.core.loop import run_episode
from opar_sim.core.seeding import episode_seed

ROOT = Path(__file__).resolve().parents[2]


def _suite():  # benchmarks/ is not a package: load suite.py from its file
    spec = importlib.util.spec_from_file_location("bench_suite", ROOT / "benchmarks" / "suite.py")
    assert spec is not None and spec.loader is not None
    suite = importlib.util.module_from_spec(spec)
    sys.modules["bench_suite"] = suite  # its dataclasses look their module up
    spec.loader.exec_module(suite)
    return suite


def test_the_suite_runs_and_writes_its_results(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "results.json"
    assert _suite().main(["--quick", "--out", str(out)]) == 0
    r = json.loads(out.read_text(encoding="utf-8"))
    for key in (
        "floor_us_per_step",
        "scalar_us_per_step",
        "simpy_us_per_step",
        "null_us_per_step",
        "cli_us_per_step",
        "batch_us_per_step",
        "batch_steps_per_cpu_second",
        "help_cpu_seconds",
        "analysis_us_per_episode",
        "run_cpu_seconds",
        "plot_cpu_seconds",
    ):
        assert r[key] > 0, key
    assert r["plot_over_run"] == pytest.approx(r["plot_cpu_seconds"] / r["run_cpu_seconds"])
    assert r["simpy_over_floor"] == pytest.approx(r["simpy_us_per_step"] / r["floor_us_per_step"])
    assert r["process"]["episodes"] == 200 and r["process"]["speedup_2_over_1"] > 0
    assert len(r["rss_mib"]) == 2 and min(r["rss_mib"]) > 10  # MiB: a Python process is larger
    # the peer is measured when langgraph is installed, else the suite says what to install
    assert ("langgraph_over_simpy" in r) != ("langgraph_missing" in r)
    assert r["llm_missing"] == "skipped with --quick"
    batch = r["batch_cli"]  # `run --engine batch` end to end, rows written (issue 27)
    assert batch["episodes"] == [5, 2_000] and 0 < batch["steps"][0] < batch["steps"][1]
    assert len(batch["runs"]) == len(batch["cpu_seconds"]) == 1  # one pair with --quick
    assert r["help_heavy_imports"] == [] and r["list_heavy_imports"] == []
    printed = capsys.readouterr().out
    rows = ("SimPy floor", "null parts", "--workers 1", "LangGraph", "batch engine", "peak RSS")
    for row in (*rows, "`plot`"):
        assert row in printed, row
    assert "controller-steps/CPU s" in printed and "opar-sim --help" in printed
    assert "`run --engine batch`, rows written" in printed
    # issue 27: every twin's rate, and the shoot-outs' wall time
    assert len(r["twin_steps_per_cpu_second"]) == 5
    assert all(v > 0 for v in r["twin_steps_per_cpu_second"].values())
    assert set(r["shootout"]) == {"flight_booking.toml", "research_qa_faults.toml"}
    assert all(t["wall_s"] > 0 and t["cpu_s"] > 0 for t in r["shootout"].values())
    assert "batch twin: research_qa_faults" in printed and "--replicates 5" in printed


def test_child_usage_reads_the_one_child_it_ran() -> None:
    memory = _suite().memory
    grow = "b = bytearray(200 * 2**20); b[::4096] = b'x' * len(b[::4096])"
    big = memory.child_usage([sys.executable, "-c", grow])
    ballast = bytearray(300 * 2**20)  # this process grows: a forked child's RSS starts there
    ballast[::4096] = b"x" * len(ballast[::4096])
    small = memory.child_usage([sys.executable, "-c", "pass"])
    # the one child's own peak: not the maximum over all children, nor this process's size
    assert big.max_rss_mib > 200 > 100 > small.max_rss_mib
    with pytest.raises(RuntimeError, match="exited 3"):
        memory.child_usage([sys.executable, "-c", "raise SystemExit(3)"])


def test_the_null_parts_run_episodes_shaped_like_flight_bookings() -> None:
    """The engine's own share is measured on loops as long as the real task's (about 11 steps)."""
    null_parts = _suite().null_parts
    task, agent, law = null_parts.NullTask(), null_parts.NullAgent(), controllers.CognitivePID()
    results = [
        run_episode(task, agent, law, null_parts.LIMITS, episode_seed(0, i), episode=i)
        for i in range(300)
    ]
    steps = [rec for r in results for rec in r.steps]
    assert 9 <= len(steps) / len(results) <= 13
    assert sum(r.success for r in results) / len(results) > 0.9  # the PID settles on the goal
    assert sum(r.cost.replans for r in results) > 0  # the law's REPLAN path runs too
    failed = sum(not rec.result.ok for rec in steps) / len(steps)
    assert 0.02 < failed < 0.08  # SimTask.execute's failures (5 %) and timeouts
    parts = null_parts.breakdown(20)
    assert 9 <= parts["steps_per_episode"] <= 13
    assert parts["rest"] == pytest.approx(parts["engine"] - parts["seeding"] - parts["law"])
    assert parts["total"] == pytest.approx(parts["engine"] + parts["rows"])
