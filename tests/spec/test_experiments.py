"""The shipped experiment specs: each validates, runs, and the foundation's claim holds."""

from __future__ import annotations

from pathlib import Path

import pytest

from opar_sim.running.runner import run_experiment
from opar_sim.spec.build import load_spec
from opar_sim.spec.edit import with_overrides
from tests.conftest import EXPERIMENTS

SPECS = sorted(EXPERIMENTS.glob("*.toml"))


@pytest.mark.parametrize("path", SPECS, ids=[p.stem for p in SPECS])
def test_every_shipped_spec_runs(path, tmp_path):
    # LLM specs run here with the simulated agent; tests/test_llm_integration.py runs their model
    spec = with_overrides(load_spec(path), episodes=5, agent="simulated")
    result = run_experiment(spec, tmp_path / "run")
    stats = next(iter(result.summary.values()))
    assert stats["episodes"] == 5 * spec.trials  # every trial of each world is a row


def success_rate(name: str, tmp_path: Path, controller: str | None = None) -> float:
    spec = with_overrides(load_spec(EXPERIMENTS / name), episodes=300, controller=controller)
    result = run_experiment(spec, tmp_path / f"{name}-{controller}")
    return float(next(iter(result.summary.values()))["success_rate"])


def test_replanning_controllers_beat_a_reflect_that_never_replans(tmp_path):
    """On the same 300 seeds, PID and Algorithm 2 succeed far more often than no-replan."""
    never = success_rate("flight_booking_no_replan.toml", tmp_path)
    pid = success_rate("flight_booking.toml", tmp_path)
    threshold = success_rate("flight_booking.toml", tmp_path, controller="threshold")
    assert pid >= never + 0.15
    assert threshold >= never + 0.12
