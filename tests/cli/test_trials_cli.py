"""compare on a spec with repeated trials: pass^1..pass^trials columns and the per-world table."""

from __future__ import annotations

import contextlib
import io
import json
import math
from collections import Counter
from pathlib import Path

import pytest

from opar_sim.cli.main import main
from opar_sim.cli.tables import comparison_table, world_table
from opar_sim.measure.run import analyze
from opar_sim.rundir import iter_episodes
from tests.conftest import EXPERIMENTS

SPEC = str(EXPERIMENTS / "flight_booking_trials.toml")


@pytest.fixture(scope="module")
def compared(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    out = tmp_path_factory.mktemp("trials") / "run"
    argv = ["compare", SPEC, "--controllers", "pid,threshold", "--episodes", "6"]
    argv += ["--out", str(out), "--workers", "1", "--detail"]
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        assert main(argv) == 0
    return out, buffer.getvalue()


def test_compare_shows_pass_hat_1_to_4_over_worlds(compared: tuple[Path, str]):
    out, printed = compared
    table = comparison_table(analyze(out))
    assert table.columns[:7] == [
        "controller",
        "n",
        "success (95% CI)",
        "pass^1",
        "pass^2",
        "pass^3",
        "pass^4",
    ]
    rows = list(iter_episodes(out))
    for row in table.rows:
        counts = Counter(r["episode"] for r in rows if r["controller"] == row[0] and r["success"])
        c = [counts.get(i, 0) for i in range(6)]
        for k in range(1, 5):
            direct = sum(math.comb(x, k) / math.comb(4, k) for x in c) / 6
            value, interval = row[2 + k].split(" ", 1)  # pass^k and its world-bootstrap interval
            assert value == f"{direct:.1%}"
            low, high = (float(x) for x in interval.strip("[]").split(", "))
            assert low <= 100 * direct <= high
    assert "pass^4" in printed


def test_detail_prints_the_successes_per_world(compared: tuple[Path, str]):
    out, printed = compared
    assert printed.count("successes per world") == 1
    table = world_table(analyze(out))
    assert table.columns == ["controller", "worlds", "0/4", "1/4", "2/4", "3/4", "4/4"]
    summary = json.loads((out / "summary.json").read_text())
    for row in table.rows:
        assert row[1] == "6"
        assert [int(v) for v in row[2:]] == summary[row[0]]["worlds_by_successes"]
    metrics = json.loads((out / "metrics.json").read_text())
    assert [metrics["pid"][f"worlds:{c}/4"] for c in range(5)] == summary["pid"][
        "worlds_by_successes"
    ]
