"""`opar-sim init` scaffolds modules whose own tests pass; `opar-sim diff` pairs two runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from opar_sim.cli.main import main
from opar_sim.measure.diff import diff_runs
from opar_sim.measure.stats import mcnemar_exact, wilson_interval
from tests.conftest import ROOT, SPEC


@pytest.mark.parametrize("kind", ["task", "controller"])
def test_init_writes_a_module_whose_test_passes(tmp_path, capsys, kind):
    name = f"my_{kind}"
    assert main(["init", name, "--kind", kind, "--dir", str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"{name}.py", f"test_{name}.py"]
    env = os.environ | {"PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3 passed" in done.stdout
    lint = subprocess.run(
        [
            sys.executable,
            "-m",
            "ruff",
            "check",
            "--select",
            "E,F,W,I,B,UP",
            "--isolated",
            "--line-length",
            "100",
            str(tmp_path / f"{name}.py"),
        ],
        capture_output=True,
        text=True,
    )
    assert lint.returncode == 0, lint.stdout


def test_init_refuses_bad_names_and_existing_files(tmp_path, capsys):
    assert main(["init", "My-Law", "--dir", str(tmp_path)]) == 2
    assert "not a module name" in capsys.readouterr().err
    assert main(["init", "law", "--dir", str(tmp_path)]) == 0
    assert main(["init", "law", "--dir", str(tmp_path)]) == 2
    assert "exists" in capsys.readouterr().err


def _run(tmp_path, name, *flags):
    out = tmp_path / name
    assert (
        main(["compare", SPEC, "--episodes", "30", "--out", str(out), "--workers", "1", *flags])
        == 0
    )
    return out


def _rows(path):
    return [json.loads(line) for line in (path / "episodes.jsonl").read_text().splitlines()]


def test_diff_pairs_common_episodes_with_the_stats_of_analysis(tmp_path, capsys):
    a = _run(tmp_path, "a", "--controllers", "pid,threshold")
    b = _run(tmp_path, "b", "--controllers", "pid,threshold,oracle", "--confirm", "2")
    d = diff_runs(a, b)
    assert d.same_worlds and d.only_a == [] and d.only_b == ["oracle"]
    assert [c.controller for c in d.controllers] == ["pid", "threshold"]
    ra = {(r["controller"], r["episode"]): r for r in _rows(a)}
    rb = {(r["controller"], r["episode"]): r for r in _rows(b)}
    t = d.controllers[1]
    sa = [ra[("threshold", i)]["success"] for i in range(30)]
    sb = [rb[("threshold", i)]["success"] for i in range(30)]
    assert t.common == 30
    assert t.success_a.rate == sum(sa) / 30 and t.success_b.rate == sum(sb) / 30
    assert (t.success_a.low, t.success_a.high) == pytest.approx(wilson_interval(sum(sa), 30))
    gained = sum(y and not x for x, y in zip(sa, sb, strict=True))
    lost = sum(x and not y for x, y in zip(sa, sb, strict=True))
    assert t.mcnemar_p == mcnemar_exact(gained, lost)
    assert t.success_diff.mean == pytest.approx((sum(sb) - sum(sa)) / 30)
    tokens = [rb[("threshold", i)]["tokens"] - ra[("threshold", i)]["tokens"] for i in range(30)]
    assert t.diffs["tokens"].mean == pytest.approx(np.mean(tokens))
    assert t.diffs["tokens"].low <= t.diffs["tokens"].mean <= t.diffs["tokens"].high
    same = diff_runs(a, a).controllers[1]  # a run against itself: nothing differs
    assert same.success_diff.mean == same.diffs["steps"].mean == same.diffs["replans"].mean == 0
    assert same.mcnemar_p == 1.0
    capsys.readouterr()
    assert main(["diff", str(a), str(b)]) == 0
    printed = capsys.readouterr().out
    assert "threshold" in printed and "only in B: oracle" in printed
    assert "same world" in printed


def test_diff_pairs_only_the_episodes_both_hold_and_says_when_worlds_differ(tmp_path, capsys):
    a = tmp_path / "a"
    b = tmp_path / "b"
    assert main(["run", SPEC, "--episodes", "20", "--out", str(a)]) == 0
    assert main(["run", SPEC, "--episodes", "12", "--seed", "9", "--out", str(b)]) == 0
    d = diff_runs(a, b)
    (c,) = d.controllers
    assert (c.n_a, c.n_b, c.common) == (20, 12, 12)
    assert not d.same_worlds
    capsys.readouterr()
    assert main(["diff", str(a), str(b), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["controllers"]["pid"]["common"] == 12 and data["same_worlds"] is False


def test_diff_bad_input_exits_2(tmp_path, capsys):
    a = tmp_path / "a"
    assert main(["run", SPEC, "--episodes", "3", "--out", str(a)]) == 0
    assert main(["diff", str(a), str(tmp_path / "nope")]) == 2
    assert "not found" in capsys.readouterr().err
    b = tmp_path / "b"
    assert main(["run", SPEC, "--episodes", "3", "--controller", "threshold", "--out", str(b)]) == 0
    assert main(["diff", str(a), str(b)]) == 2
    assert "share no controller" in capsys.readouterr().err
