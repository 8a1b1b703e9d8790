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
