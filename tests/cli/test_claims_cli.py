"""``opar-sim claims``: the table and claims.json from a quick run; bad input exits 2."""

from __future__ import annotations

import json

from opar_sim.cli.main import main
from tests.conftest import EXPERIMENTS


def test_quick_claims_print_the_table_and_write_claims_json(tmp_path, capsys):
    out = tmp_path / "claims"
    argv = ["claims", "--quick", "--only", "replan_beats_no_replan", "--workers", "1"]
    assert main([*argv, "--root", str(EXPERIMENTS.parent), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "replan_beats_no_replan" in printed and "95% CI" in printed
    data = json.loads((out / "claims.json").read_text())
    assert [c["id"] for c in data["claims"]] == ["replan_beats_no_replan"]
    assert data["seeds"] == [0] and data["episodes_per_seed"] == 40


def test_an_unknown_claim_exits_2_with_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["claims", "--quick", "--only", "pid_is_magic"]) == 2
    err = capsys.readouterr().err
    assert "unknown claim" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "runs").exists()


def test_quick_claims_print_holm_p_and_the_exploratory_claims_apart(tmp_path, capsys):
    out = tmp_path / "claims"
    argv = ["claims", "--quick", "--only", "pid_success,faults_do_not_cost_success"]
    assert (
        main([*argv, "--workers", "1", "--root", str(EXPERIMENTS.parent), "--out", str(out)]) == 0
    )
    printed = capsys.readouterr().out
    assert "Holm p" in printed and "exploratory claims" in printed
    data = json.loads((out / "claims.json").read_text())
    by_id = {c["id"]: c for c in data["claims"]}
    assert data["holm_family"] == 2
    assert by_id["faults_do_not_cost_success"]["verdict"] == "exploratory"
    assert "5e41908" in by_id["faults_do_not_cost_success"]["exploratory"]


def test_the_recheck_plans_its_episodes_and_states_their_power(tmp_path, capsys):
    out = tmp_path / "recheck"
    argv = ["claims", "--recheck", "--cap", "60", "--only", "pid_success,pid_beats_threshold"]
    argv += ["--workers", "1", "--root", str(EXPERIMENTS.parent), "--out", str(out)]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "confirmatory re-check" in printed and "power" in printed
    data = json.loads((out / "recheck.json").read_text())
    by_id = {c["id"]: c for c in data["claims"]}
    assert data["cap"] == 60 and data["holm_family"] == 2
    # a small claimed effect needs far more than the cap: the row says so, with its power
    small = by_id["pid_beats_threshold"]
    assert small["capped"] and small["episodes"] == 60
    assert small["units_for_80pct_power_alpha_over_m"] > 1000 and small["power"] < 0.2
    assert by_id["pid_success"]["episodes"] == 60 and not by_id["pid_success"]["capped"]
