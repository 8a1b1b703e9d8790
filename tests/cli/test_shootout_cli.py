"""``opar-sim shootout`` and ``opar-sim ablate`` end to end, and their bad input."""

from __future__ import annotations

import json

import pytest

from opar_sim.cli.main import main
from opar_sim.studies.seeds import HOLDOUT_SEED
from tests.conftest import SPEC


def test_a_tiny_shootout_runs_end_to_end_and_writes_its_files(tmp_path, capsys):
    out = tmp_path / "so"
    argv = ["shootout", SPEC, "--controllers", "pid,threshold", "--trials", "3"]
    argv += ["--train-episodes", "20", "--holdout-episodes", "20", "--workers", "1"]
    assert main([*argv, "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "shoot-out (tuned, held out)" in printed and "Holm p" in printed
    data = json.loads((out / "shootout.json").read_text())
    assert (out / "shootout.png").stat().st_size > 0
    assert data["protocol"]["trials"] == 3 and data["protocol"]["train_seed"] == 100
    assert data["protocol"]["holdout_seed"] == HOLDOUT_SEED
    assert {c["name"] for c in data["contenders"]} == {"pid", "threshold"}
    assert data["contenders"][0]["rank"] == 1
    for c in data["contenders"]:
        assert c["holdout"]["episodes"] == 20
        assert "guards.confirm" in c["best_params"]
    assert len(data["pairs"]) == 1


def test_a_tiny_ablation_runs_every_arm_on_the_same_episodes(tmp_path, capsys):
    out = tmp_path / "ab"
    assert main(["ablate", SPEC, "--episodes", "10", "--workers", "1", "--out", str(out)]) == 0
    assert "PID ablation" in capsys.readouterr().out
    data = json.loads((out / "ablation.json").read_text())
    assert [a["arm"] for a in data["arms"]][:2] == ["PID, settle 2", "PID, settle 1"]
    assert len(data["arms"]) == 12  # 6 variants (the default PID has a pace) × 2 settle counts
    assert data["arms"][0]["gains"] == {"kp": 2.3, "ki": 0.17, "kd": 1.6}  # the fitted defaults


BAD = {
    "unknown controller": (["shootout", SPEC, "--controllers", "pid,bangbang"], "unknown"),
    "one controller": (["shootout", SPEC, "--controllers", "pid"], "at least two"),
    "listed twice": (["shootout", SPEC, "--controllers", "pid,pid"], "twice"),
    "no such spec": (["shootout", "missing.toml"], "missing.toml"),
    "no such spec (ablate)": (["ablate", "missing.toml"], "missing.toml"),
    "zero trials": (["shootout", SPEC, "--trials", "0"], "must be >= 1"),
    "zero episodes": (["ablate", SPEC, "--episodes", "0"], "must be >= 1"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_input_exits_2_with_one_line(case, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    argv, message = BAD[case]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "runs").exists()


def test_a_batch_screened_shootout_rescores_finalists_of_every_contender(tmp_path, capsys):
    """bayes (no array twin: its scalar law row by row) and pid are both screened."""
    out = tmp_path / "sb"
    argv = ["shootout", SPEC, "--controllers", "bayes,pid", "--trials", "4", "--engine", "batch"]
    argv += ["--finalists", "2", "--train-episodes", "20", "--holdout-episodes", "20"]
    assert main([*argv, "--workers", "1", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "trials on the SimPy engine" not in printed and "batch-screened" in printed
    data = json.loads((out / "shootout.json").read_text())
    assert data["protocol"]["engine"] == {"trials": "batch", "finalists": 2, "holdout": "simpy"}
    for contender in data["contenders"]:
        assert contender["trials_engine"] == "batch", contender["name"]
        assert 1 <= len(contender["finalists"]) <= 2
        winner = min(contender["finalists"], key=lambda f: (f["simpy_objective"], f["trial"]))
        assert contender["train_objective"] == winner["simpy_objective"]
        assert contender["best_params"] == winner["params"]
        assert contender["holdout"]["episodes"] == 20


def test_a_spec_the_batch_engine_cannot_run_is_searched_on_simpy(tmp_path, capsys):
    """Screening asked for a task with no vectorised model: the same search on SimPy, said."""
    spec = SPEC.replace("flight_booking.toml", "weather.toml")
    out = tmp_path / "sw"
    argv = ["shootout", spec, "--controllers", "pid,threshold", "--trials", "2"]
    argv += ["--engine", "batch", "--train-episodes", "10", "--holdout-episodes", "10"]
    assert main([*argv, "--workers", "1", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "pid: trials on the SimPy engine (no vectorised model of task 'weather'" in printed
    data = json.loads((out / "shootout.json").read_text())
    assert all(c["trials_engine"] == "simpy" and c["finalists"] == [] for c in data["contenders"])
