"""The shared stop confirmation ([guards] confirm) on the shipped flight-booking spec.

The cognitive PID's lead over threshold on flight_booking came from its
built-in two-reading confirmation (``settle_count = 2``).  Given the same
confirmation as a guard, threshold closes the gap; the PID with
``settle_count = 1`` plus ``confirm = 2`` is the PID at its default, decision
for decision.
"""

from __future__ import annotations

import json

from opar_sim.running.runner import run_experiment
from opar_sim.spec.build import load_spec
from opar_sim.spec.edit import apply_changes, with_overrides
from tests.conftest import SPEC


def test_confirm_2_raises_threshold_on_flight_booking_seed_0(tmp_path):
    base = with_overrides(load_spec(SPEC), seed=0, episodes=300, controller="threshold")
    # Algorithm 2's thresholds as the OPAR document gives them (the defaults are re-fitted)
    algorithm_2 = {"threshold_complete": 0.9, "threshold_drift": 0.6, "threshold_valid": 0.3}
    base = apply_changes(base, {"controller.params": algorithm_2}, "test")
    confirmed = with_overrides(base, confirm=2)
    plain = run_experiment(base, tmp_path / "plain").summary["threshold"]
    held = run_experiment(confirmed, tmp_path / "held").summary["threshold"]
    assert round(plain["success_rate"] * 300) == 239  # 79.7 %
    assert round(held["success_rate"] * 300) == 250  # 83.3 %: 15 episodes gained, 4 lost
    assert held["outcomes"]["premature"] == 8 < plain["outcomes"]["premature"] == 37


def test_pid_settle_1_with_confirm_2_is_the_default_pid(tmp_path):
    spec = with_overrides(load_spec(SPEC), seed=0, episodes=60)
    single = apply_changes(spec, {"controller.params.settle_count": 1}, "test")
    confirmed = with_overrides(single, confirm=2)
    default = run_experiment(spec, tmp_path / "default").out
    guarded = run_experiment(confirmed, tmp_path / "guarded").out

    def rows(out, name):
        return [json.loads(line) for line in (out / name).read_text().splitlines()]

    assert rows(default, "episodes.jsonl") == rows(guarded, "episodes.jsonl")
    signals = [(r["step"], r["signal"]) for r in rows(default, "steps.jsonl")]
    assert signals == [(r["step"], r["signal"]) for r in rows(guarded, "steps.jsonl")]
