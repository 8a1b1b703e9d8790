"""``diff`` never pairs runs whose episodes are different worlds (issue 26)."""

from __future__ import annotations

import json

from opar_sim.cli import main
from opar_sim.rundir.manifest import read_header, run_engine
from tests.conftest import SPEC


def test_diff_refuses_to_pair_a_simpy_run_with_a_batch_run(tmp_path, capsys):
    simpy, batch = tmp_path / "simpy", tmp_path / "batch"
    argv = ["run", str(SPEC), "--episodes", "12", "--seed", "4", "--workers", "1"]
    assert main([*argv, "--out", str(simpy)]) == 0
    assert main([*argv, "--engine", "batch", "--out", str(batch)]) == 0
    assert (run_engine(simpy), run_engine(batch)) == ("simpy", "batch")
    assert "engine" not in (read_header(simpy) or {})  # a SimPy run's manifest is as before
    capsys.readouterr()
    assert main(["diff", str(simpy), str(batch)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "A ran on the simpy engine and B on the batch engine" in err


def test_diff_of_different_seeds_says_unpaired(tmp_path, capsys):
    a, b = tmp_path / "a", tmp_path / "b"
    argv = ["run", str(SPEC), "--episodes", "8", "--workers", "1"]
    assert main([*argv, "--seed", "1", "--out", str(a)]) == 0
    assert main([*argv, "--seed", "2", "--out", str(b)]) == 0
    capsys.readouterr()
    assert main(["diff", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert "(UNPAIRED)" in out and "not valid" in out
    assert main(["diff", str(a), str(b), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["same_worlds"] is False
