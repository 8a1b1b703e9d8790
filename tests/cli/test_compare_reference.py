"""``compare`` leads with each law's paired difference to a reference law (issue 26)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from opar_sim.cli import main
from opar_sim.measure.diff import against_reference
from opar_sim.measure.stats import paired_interval
from tests.conftest import SPEC


@pytest.fixture(scope="module")
def compared(tmp_path_factory: pytest.TempPathFactory):
    out = tmp_path_factory.mktemp("ref") / "run"
    argv = ["compare", str(SPEC), "--controllers", "pid,threshold", "--episodes", "60"]
    assert main([*argv, "--engine", "batch", "--out", str(out), "--reference", "threshold"]) == 0
    return out


def test_the_difference_is_the_law_minus_the_reference_on_the_same_episodes(compared):
    rows = [json.loads(x) for x in (compared / "episodes.jsonl").read_text().splitlines()]
    success = {
        c: [
            float(r["success"])
            for r in sorted(rows, key=lambda r: r["episode"])
            if r["controller"] == c
        ]
        for c in ("pid", "threshold")
    }
    (pid,) = against_reference(compared, "threshold")
    assert pid.controller == "pid" and pid.common == 60
    expected = paired_interval(success["pid"], success["threshold"], np.random.default_rng(0))
    assert pid.success_diff.mean == pytest.approx(expected.mean, abs=1e-12)
    assert pid.success_b.rate == pytest.approx(np.mean(success["pid"]))


def test_compare_prints_the_reference_table_first(tmp_path, capsys):
    argv = ["compare", str(SPEC), "--controllers", "pid,threshold", "--episodes", "30"]
    assert main([*argv, "--engine", "batch", "--out", str(tmp_path / "r")]) == 0
    out = capsys.readouterr().out
    assert out.index("paired differences to pid") < out.index("controllers compared")
    line = next(x for x in out.splitlines() if x.startswith("│ threshold"))
    assert "[" in line and "]" in line  # intervals written [a, b]


def test_an_unknown_reference_is_one_line_exit_2(tmp_path, capsys):
    argv = ["compare", str(SPEC), "--controllers", "pid,threshold", "--reference", "PID"]
    assert main([*argv, "--episodes", "5", "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--reference 'PID' is not one of pid, threshold" in err
    assert not (tmp_path / "r").exists()
