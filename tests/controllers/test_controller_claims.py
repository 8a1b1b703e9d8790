"""The comparison's claims on common seeds: the oracle bounds the PID, the PID beats open loop."""

from __future__ import annotations

from opar_sim.running.runner import run_experiment
from opar_sim.spec.build import load_spec, parse_spec
from tests.conftest import EXPERIMENTS


def test_oracle_bounds_the_pid_which_beats_open_loop(tmp_path):
    data = load_spec(EXPERIMENTS / "flight_booking_controllers.toml").model_dump()
    data["episodes"] = 200
    data["compare"] = [{"name": n, "params": {}} for n in ("oracle", "pid", "open_loop")]
    summary = run_experiment(parse_spec(data), tmp_path / "run").summary
    oracle, pid, open_loop = summary["oracle"], summary["pid"], summary["open_loop"]
    assert oracle["success_rate"] >= pid["success_rate"] + 0.05
    assert oracle["mean_tokens"] < pid["mean_tokens"]
    assert "premature" not in oracle["outcomes"]  # it never stops an unfinished task
    assert pid["success_rate"] >= open_loop["success_rate"] + 0.4
    assert open_loop["mean_replans"] == 0.0
    assert open_loop["mean_steps"] <= 5.0  # the plan template's length
