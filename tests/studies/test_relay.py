"""Classic tuning on the plant: the relay test, Ziegler–Nichols, Tyreus–Luyben, and the tuner."""

from __future__ import annotations

import json
import math

import pytest

from opar_sim.cli.main import main
from opar_sim.studies.relay import (
    PIDGains,
    closed_loop,
    iae,
    relay_test,
    tune_plant,
    tyreus_luyben,
    ziegler_nichols,
)


def test_ziegler_nichols_and_tyreus_luyben_rules():
    assert ziegler_nichols(2.0, 8.0) == PIDGains(1.2, 1.2 / 4.0, 1.2 * 1.0)
    tl = tyreus_luyben(2.2, 10.0)
    assert tl.kp == pytest.approx(1.0)
    assert tl.ki == pytest.approx(1.0 / 22.0)
    assert tl.kd == pytest.approx(10.0 / 6.3)


def test_relay_finds_the_ultimate_gain_and_period_of_a_noise_free_plant():
    relay = relay_test({"noise": 0.0}, seed=0)
    assert relay.ultimate_gain == pytest.approx(relay.true_ultimate_gain, rel=0.3)
    # the limit cycle's period: for d = 2, τ = 3 the loop's phase crossover is near 8 samples
    assert 6.0 <= relay.ultimate_period <= 10.0


def test_iae_of_a_perfect_step_is_the_dead_time():
    assert iae([0.0, 0.0, 1.0, 1.0]) == 1.0
    assert math.isclose(iae([0.0, 0.5, 1.5]), 1.0)


def test_a_pid_at_ziegler_nichols_gains_settles_the_plant():
    relay = relay_test({}, seed=0)
    ys = closed_loop({}, ziegler_nichols(relay.ultimate_gain, relay.ultimate_period), 0, 0, 80)
    assert abs(ys[-1] - 1.0) < 0.1


def test_the_tuner_scores_every_contender_on_the_same_held_out_seeds():
    baselines = {"zn": PIDGains(1.1, 0.27, 1.1), "tl": PIDGains(0.84, 0.046, 1.1)}
    out = tune_plant({}, baselines, seed=0, trials=6, train_episodes=5, holdout_episodes=20)
    names = [c.name for c in out]
    assert names == ["zn", "tl", "tuned"]
    tuned = out[-1]
    mean, lo, hi = tuned.margin_over["zn"]
    assert lo <= mean <= hi
    assert mean == pytest.approx(out[0].holdout_iae - tuned.holdout_iae)


def test_relay_command_writes_gains_and_figure(tmp_path, capsys):
    spec = tmp_path / "p.toml"
    spec.write_text('name = "p"\n[task]\nname = "plant"\n')
    out = tmp_path / "out"
    assert main(["relay", str(spec), "--trials", "4", "--holdout", "10", "--out", str(out)]) == 0
    report = json.loads((out / "relay.json").read_text())
    assert report["relay"]["ultimate_gain"] > 0
    assert [c["name"] for c in report["contenders"]] == [
        "ziegler_nichols",
        "tyreus_luyben",
        "tuned",
    ]
    assert (out / "gains.toml").is_file() and (out / "relay.png").is_file()
    assert "held-out" in capsys.readouterr().out


def test_relay_needs_the_plant(tmp_path, capsys):
    spec = tmp_path / "p.toml"
    spec.write_text('name = "p"\n')
    assert main(["relay", str(spec), "--out", str(tmp_path / "o")]) == 2
    assert "needs task `plant`" in capsys.readouterr().err
