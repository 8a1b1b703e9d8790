"""A 100,000-episode batch run through the command line: figures drawn, report and plot work.

The batch engine writes its steps as Parquet (``rundir.columnar``); ``run``'s progress
figure, ``plot``, ``report`` and ``compare``'s analysis read them through the one reader,
so a batch run is analysed as fully as a SimPy run (issue 27).
"""

from __future__ import annotations

import json
import re

import matplotlib.image as mpimg
import numpy as np
import pytest

from opar_sim.cli import main
from opar_sim.cli.report_traces import TRACE_EPISODES
from opar_sim.rundir import STEPS_PARQUET, iter_episodes
from tests.conftest import SPEC

pytestmark = pytest.mark.slow  # a 100,000-episode run, plotted and reported (about a minute)
EPISODES = 100_000
BLUE = np.array([0x1F, 0x77, 0xB4]) / 255  # the first controller's colour (matplotlib's C0)


def _drawn(png) -> int:
    """Pixels of the first controller's colour: its median line and interquartile band."""
    pixels = mpimg.imread(png)[..., :3]
    return int(np.all(np.abs(pixels - BLUE) < 0.05, axis=-1).sum())


@pytest.fixture(scope="module")
def big_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("batch") / "run"
    argv = ["run", SPEC, "--engine", "batch", "--episodes", str(EPISODES), "--out", str(out)]
    assert main(argv) == 0
    return out


def test_a_big_batch_run_draws_its_progress_figure(big_run, capsys):
    assert (big_run / STEPS_PARQUET).is_file()
    assert _drawn(big_run / "progress.png") > 1000  # a blank figure has none
    capsys.readouterr()


def test_plot_draws_a_big_batch_runs_figures(big_run, capsys):
    capsys.readouterr()
    assert main(["plot", str(big_run)]) == 0
    captured = capsys.readouterr()
    assert "no finished episode" not in captured.out + captured.err
    assert _drawn(big_run / "figures" / "convergence.png") > 1000
    for stem in ("signals", "phase", "outcomes", "pareto"):
        assert (big_run / "figures" / f"{stem}.png").is_file()


def test_report_holds_every_episode_and_the_first_ones_steps(big_run, capsys):
    assert main(["report", str(big_run)]) == 0
    capsys.readouterr()
    page = (big_run / "report.html").read_text("utf-8")
    found = re.search(r"<script[^>]*id=.report-data.[^>]*>(.*?)</script>", page, re.S)
    assert found is not None
    data = json.loads(found.group(1))
    assert len(data["episodes"]) == EPISODES
    assert len(data["traces"]) == TRACE_EPISODES == data["trace_limit"]
    first = next(iter_episodes(big_run))
    assert len(data["traces"]["pid|0|1|1"]["st"]) == first["steps"]
    assert len(page) < 30_000_000  # every step embedded would be about 70 MB


def test_compare_on_the_batch_engine_fills_its_analysis_table(tmp_path, capsys):
    out = tmp_path / "compare"
    argv = ["compare", SPEC, "--controllers", "pid,threshold", "--engine", "batch"]
    assert main([*argv, "--episodes", "500", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    table = text[text.index("controllers compared") :]
    assert re.search(r"│ pid +│ +500 │ +\d+\.\d%", table)
    assert re.search(r"│ threshold +│ +500 │ +\d+\.\d%", table)
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics
