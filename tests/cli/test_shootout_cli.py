"""``opar-sim shootout`` and ``opar-sim ablate`` end to end, and their bad input."""

from __future__ import annotations

import json

import pytest

from opar_sim.cli.main import main
from opar_sim.studies.seeds import RELEASE_HOLDOUT_SEED, replicate_seeds
from tests.conftest import SPEC


def test_a_tiny_shootout_runs_end_to_end_and_writes_its_files(tmp_path, capsys):
    out = tmp_path / "so"
    argv = ["shootout", SPEC, "--controllers", "pid,threshold", "--trials-per-dim", "1"]
    argv += ["--replicates", "2", "--train-episodes", "20", "--holdout-episodes", "20"]
    assert main([*argv, "--workers", "1", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "shoot-out (2 tuning replicates per law, held out)" in printed and "Holm p" in printed
    assert "replicate-level comparisons" in printed and "budget rule: trials = 1 × d" in printed
    assert "tuning against the shipped defaults" in printed
    data = json.loads((out / "shootout.json").read_text())
    assert (out / "shootout.png").stat().st_size > 0
    protocol = data["protocol"]
    assert protocol["trials_per_dim"] == 1 and protocol["replicates"] == 2
    assert protocol["train_seeds"] == [seed for seed, _ in replicate_seeds(2)]
    assert protocol["holdout_seed"] == RELEASE_HOLDOUT_SEED
    assert {law["name"] for law in data["laws"]} == {"pid", "threshold"}
    assert data["laws"][0]["rank"] == 1 and data["laws"][0]["vs_leader"] is None
    for law in data["laws"]:
        assert law["defaults"]["episodes"] == 20
        assert all("guards.confirm" in p for p in law["tuned_params"])
        assert law["episodes"]["holdout_episodes"] == 3 * 20  # 2 replicates + the defaults


def test_a_shootout_asking_for_more_replicates_than_the_ledger_has_exits_2(tmp_path, capsys):
    argv = ["shootout", SPEC, "--replicates", "11", "--seed", "1", "--out", str(tmp_path / "x")]
    assert main(argv) == 2
    assert "the ledger has" in capsys.readouterr().err


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
    "zero trials": (["shootout", SPEC, "--trials-per-dim", "0"], "must be >= 1"),
    "zero replicates": (["shootout", SPEC, "--replicates", "0"], "must be >= 1"),
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
    argv = ["shootout", SPEC, "--controllers", "bayes,pid", "--trials-per-dim", "4"]
    argv += ["--engine", "batch", "--replicates", "2", "--finalists", "2"]
    argv += ["--train-episodes", "20", "--holdout-episodes", "20"]
    assert main([*argv, "--workers", "1", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "trials on the SimPy engine" not in printed and "batch-screened" in printed
    data = json.loads((out / "shootout.json").read_text())
    assert data["protocol"]["engine"] == {"trials": "batch", "finalists": 2, "holdout": "simpy"}
    for law in data["laws"]:
        assert law["trials_engine"] == "batch", law["name"]
        spent = law["episodes"]
        assert spent["training_engine"] == "batch"
        assert 20 <= spent["finalist_episodes_simpy"] <= 2 * 2 * 20  # ≤ 2 finalists × 2 reps
        assert law["defaults"]["episodes"] == 20


def test_a_spec_the_batch_engine_cannot_run_is_searched_on_simpy(tmp_path, capsys):
    """Screening asked for a task with no vectorised model: the same search on SimPy, said."""
    spec = SPEC.replace("flight_booking.toml", "plant_relay.toml")
    out = tmp_path / "sw"
    argv = ["shootout", spec, "--controllers", "pid,threshold", "--trials-per-dim", "1"]
    argv += ["--engine", "batch", "--replicates", "2"]
    argv += ["--train-episodes", "10", "--holdout-episodes", "10"]
    assert main([*argv, "--workers", "1", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "pid: trials on the SimPy engine (no vectorised model of task 'plant'" in printed
    data = json.loads((out / "shootout.json").read_text())
    assert all(law["trials_engine"] == "simpy" for law in data["laws"])
    assert all(law["episodes"]["finalist_episodes_simpy"] == 0 for law in data["laws"])
