"""``opar-sim shootout`` and ``opar-sim ablate`` end to end, and their bad input."""

from __future__ import annotations

import json

import pytest

from opar_sim.cli.main import main
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
    assert data["protocol"]["holdout_seed"] == 1_000_003
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


def test_a_batch_screened_shootout_rescores_finalists_and_searches_bayes_on_simpy(tmp_path, capsys):
    out = tmp_path / "sb"
    argv = ["shootout", SPEC, "--controllers", "bayes,pid", "--trials", "4", "--engine", "batch"]
    argv += ["--finalists", "2", "--train-episodes", "20", "--holdout-episodes", "20"]
    assert main([*argv, "--workers", "1", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "bayes: trials on the SimPy engine" in printed and "batch-screened" in printed
    data = json.loads((out / "shootout.json").read_text())
    assert data["protocol"]["engine"] == {"trials": "batch", "finalists": 2, "holdout": "simpy"}
    by_name = {c["name"]: c for c in data["contenders"]}
    assert by_name["bayes"]["trials_engine"] == "simpy" and by_name["bayes"]["finalists"] == []
    pid = by_name["pid"]
    assert pid["trials_engine"] == "batch" and 1 <= len(pid["finalists"]) <= 2
    winner = min(pid["finalists"], key=lambda f: (f["simpy_objective"], f["trial"]))
    assert pid["train_objective"] == winner["simpy_objective"]
    assert pid["best_params"] == winner["params"]
    assert all(c["holdout"]["episodes"] == 20 for c in data["contenders"])
