"""A smoke run of the benchmark suite (``make bench``) at tiny sizes: no timing asserted."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_the_suite_runs_and_writes_its_results(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = importlib.util.spec_from_file_location("bench_suite", ROOT / "benchmarks" / "suite.py")
    assert spec is not None and spec.loader is not None
    suite = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(suite)
    out = tmp_path / "results.json"
    assert suite.main(["--quick", "--out", str(out)]) == 0
    results = json.loads(out.read_text(encoding="utf-8"))
    for key in (
        "floor_us_per_step",
        "simpy_us_per_step",
        "batch_us_per_step",
        "batch_steps_per_cpu_second",
        "help_cpu_seconds",
    ):
        assert results[key] > 0, key
    assert results["help_heavy_imports"] == []
    printed = capsys.readouterr().out
    assert "batch engine" in printed and "controller-steps/s/core" in printed
