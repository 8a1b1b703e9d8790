"""compare, plot and report: one table, every figure, one self-contained page; bad input exits 2."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import numpy as np
import pytest

from controllers import registry
from controllers.threshold import ThresholdReflector
from opar_sim.cli.commands.compare_cmd import with_controllers
from opar_sim.cli.main import main
from opar_sim.cli.tables import comparison_table, response_table
from opar_sim.figures import build_figures
from opar_sim.measure.run import analyze
from opar_sim.rundir import iter_episodes, iter_steps, iter_traces
from opar_sim.running.runner import run_experiment
from opar_sim.spec.build import load_spec, parse_spec
from opar_sim.spec.edit import with_overrides
from tests.conftest import SPEC

FIGURES = ("convergence", "signals", "phase", "outcomes", "pareto", "pid_terms")


@pytest.fixture(scope="module")
def compared(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    out = tmp_path_factory.mktemp("compare") / "run"
    argv = [
        "compare",
        SPEC,
        "--controllers",
        "pid,threshold",
        "--episodes",
        "12",
        "--out",
        str(out),
        "--detail",
    ]
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        assert main(argv) == 0
    return out, buffer.getvalue()


def test_compare_prints_one_table_with_the_oscillation_and_stopping_columns(compared):
    out, printed = compared
    assert printed.count("controllers compared") == 1
    assert printed.count("convergence and oscillation") == 1  # --detail
    assert "pid" in printed and "threshold" in printed
    table = comparison_table(analyze(out))
    assert table.columns == [
        "controller",
        "n",
        "success (95% CI)",
        "steps",
        "tokens",
        "replans",
        "thrash",
        "cycles",
        "premature",
    ]
    assert [row[0] for row in table.rows] == ["pid", "threshold"]
    assert "pass^" not in printed.split("n: episodes")[0]  # one trial per world: no pass^k
    assert "outcomes (episodes)" not in printed  # the run's own tables are not repeated
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["pid"]["pass^1"] == metrics["pid"]["success_rate"]
    assert [metrics["pid"][f"pass^{k}"] for k in (2, 4, 8)] == [None, None, None]


def test_compare_writes_metrics_and_every_figure_as_png_and_svg(compared):
    out, _ = compared
    metrics = json.loads((out / "metrics.json").read_text())
    assert list(metrics) == ["pid", "threshold"]
    summary = json.loads((out / "summary.json").read_text())
    for name in metrics:
        assert metrics[name]["success_rate"] == pytest.approx(summary[name]["success_rate"])
        assert metrics[name]["steps"] == pytest.approx(summary[name]["mean_steps"])
    for stem in FIGURES:
        assert (out / "figures" / f"{stem}.png").read_bytes()[:4] == b"\x89PNG"
        assert (out / "figures" / f"{stem}.svg").read_text().lstrip().startswith("<?xml")


def test_controllers_run_on_common_seeds(compared):
    out, _ = compared
    seeds: dict[str, list[int]] = {}
    for row in iter_episodes(out):
        seeds.setdefault(row["controller"], []).append(row["seed"])
    assert seeds["pid"] == seeds["threshold"]


def test_traces_are_grouped_per_episode_in_one_pass(compared):
    out, _ = compared
    rows = list(iter_episodes(out))
    traces = list(iter_traces(out))
    assert [(t.controller, t.episode, len(t)) for t in traces] == [
        (r["controller"], r["episode"], r["steps"]) for r in rows
    ]


def test_replan_decisions_match_the_replans_the_episode_paid_for(compared):
    """A REPLAN decided at the last step is never carried out; every other one is."""
    out, _ = compared
    analysis = analyze(out)
    paid = {(r["controller"], r["episode"]): r["replans"] for r in iter_episodes(out)}
    last = {(t.controller, t.episode): t.signals[-1] == "replan" for t in iter_traces(out)}
    for e in analysis.episodes:
        key = (e.controller, e.episode)
        assert e.replans - last[key] == paid[key]


def test_analysis_frames_have_one_row_per_controller_and_per_episode(compared):
    out, _ = compared
    analysis = analyze(out)
    frame = analysis.to_frame()
    assert list(frame.index) == ["pid", "threshold"]
    assert {"success_rate", "thrash_share", "settling_time", "mean_gap"} <= set(frame.columns)
    assert len(analysis.episodes_frame()) == 24


def test_the_analysis_keeps_only_a_few_trajectories_but_measures_every_episode(compared):
    out, _ = compared
    analysis = analyze(out, keep=3)
    assert [len(ts) for ts in analysis.traces.values()] == [3, 3]
    assert [m.episodes for m in analysis.controllers.values()] == [12, 12]


def test_the_analysis_plots_its_figures_without_saving_them(compared):
    out, _ = compared
    figure_set = build_figures(analyze(out), controller="pid")
    figures = figure_set.figures
    assert set(figures) == set(FIGURES)
    assert figures["pid_terms"].axes[1].get_ylabel() == "term value (dimensionless)"
    figure_set.close()


def test_plot_rebuilds_the_figures_without_rerunning(compared, tmp_path):
    out, _ = compared
    before = (out / "steps.jsonl").read_bytes()
    assert (
        main(
            [
                "plot",
                str(out),
                "--out",
                str(tmp_path / "figs"),
                "--controller",
                "pid",
                "--episode",
                "3",
            ]
        )
        == 0
    )
    for stem in FIGURES:
        assert (tmp_path / "figs" / f"{stem}.png").is_file()
    assert (out / "steps.jsonl").read_bytes() == before


def test_report_is_one_self_contained_html_page(compared, tmp_path):
    out, _ = compared
    page = tmp_path / "report.html"
    assert main(["report", str(out), "--out", str(page)]) == 0
    text = page.read_text()
    assert text.startswith("<!DOCTYPE html>")
    assert text.count('<svg class="fig"') == len(FIGURES)  # inline vector figures
    assert "<img" not in text  # no PNG figures (the raster's pixels sit inside its SVG)
    assert "src=" not in text and 'href="http' not in text and "src='http" not in text
    assert "controllers compared" in text and "convergence and oscillation" in text
    assert f"<code>{out.resolve()}</code>" in text  # the absolute run path
    assert "opar-sim</dt>" in text and "commit</dt>" in text
    assert 'name = "flight_booking"' in text  # the spec, as TOML


def test_report_spec_is_toml_that_reads_back_as_the_same_spec(compared):
    import tomllib

    from opar_sim.cli.report import spec_toml

    out, _ = compared
    analysis = analyze(out)
    assert parse_spec(tomllib.loads(spec_toml(analysis))) == analysis.spec


def test_report_reuses_the_figures_compare_drew(compared):
    from opar_sim.cli.report import figure_svgs

    out, _ = compared
    before = {p.name: p.stat().st_mtime_ns for p in (out / "figures").iterdir()}
    svgs, index, drawn = figure_svgs(analyze(out))
    assert not drawn and list(svgs) == list(FIGURES)
    assert {p.name: p.stat().st_mtime_ns for p in (out / "figures").iterdir()} == before
    assert set(index["raster"]) == {"pid", "threshold"}
    # other options than the drawn ones: redrawn
    _, _, drawn = figure_svgs(analyze(out), controller="pid", episode=3)
    assert drawn


def test_report_embeds_every_step_of_every_episode(compared):
    from opar_sim.cli.report import trace_data

    out, _ = compared
    data = trace_data(out)
    steps = list(iter_steps(out))
    assert sum(len(t["st"]) for t in data["traces"].values()) == len(steps)
    assert len(data["episodes"]) == len(list(iter_episodes(out)))
    first = data["traces"]["pid|0|1|1"]
    row = next(r for r in steps if r["controller"] == "pid" and r["episode"] == 0)
    assert data["strings"][first["act"][0]] == row["action"]
    assert first["d"][0] == round(row["delta_task"], 3)
    assert first["terms"]["effort"][0] == round(row["terms"]["effort"], 3)


class _Oracle(ThresholdReflector):
    """The threshold law under the oracle's name: its regret against threshold must be 0."""

    name = "oracle"


def test_regret_against_the_oracle_is_paired_on_common_seeds(tmp_path, monkeypatch):
    monkeypatch.setitem(registry._REGISTRY, "oracle", _Oracle)
    spec = with_controllers(with_overrides(load_spec(SPEC), episodes=8), ["threshold", "oracle"])
    run_experiment(spec, tmp_path / "run")
    analysis = analyze(tmp_path / "run")
    assert comparison_table(analysis).columns[-1] == "regret (pp)"
    regret = analysis.controllers["threshold"].regret
    assert regret is not None and (regret.mean, regret.low, regret.high) == (0.0, 0.0, 0.0)
    assert analysis.controllers["oracle"].regret is None
    tokens = analysis.controllers["threshold"].token_regret
    assert tokens is not None and tokens.mean == 0.0
    assert response_table(analysis).columns[-1] == "Δtokens"


BAD = {
    "missing run directory": (["plot", "no/such/run"], "run directory not found"),
    "not a run directory": (["report", "."], "is not a run directory"),
    "a sweep directory": (["plot", "sweep"], "give one of its point directories"),
    "empty controller list": (["compare", SPEC, "--controllers", " , "], "at least one controller"),
    "unknown controller": (
        ["compare", SPEC, "--controllers", "pid,bangbang"],
        "unknown controller",
    ),
    "controller listed twice": (["compare", SPEC, "--controllers", "pid,pid"], "listed twice"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_input_exits_2_with_one_line(case, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sweep").mkdir()
    (tmp_path / "sweep" / "sweep.json").write_text("{}")
    argv, message = BAD[case]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "runs").exists()


def test_plot_rejects_a_controller_that_is_not_in_the_run(compared, capsys):
    out, _ = compared
    assert main(["plot", str(out), "--controller", "oracle"]) == 2
    assert "not in this run" in capsys.readouterr().err


def test_sub_agent_steps_are_not_mixed_into_the_episode(tmp_path):
    rows = [
        {
            "controller": "pid",
            "episode": 0,
            "agent": "main",
            "step": 1,
            "time": 1.0,
            "progress": 0.5,
        },
        {
            "controller": "pid",
            "episode": 0,
            "agent": "sub",
            "step": 1,
            "time": 0.5,
            "progress": 1.0,
        },
        {
            "controller": "pid",
            "episode": 1,
            "agent": "main",
            "step": 1,
            "time": 2.0,
            "progress": 1.0,
        },
    ]
    (tmp_path / "steps.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    traces = list(iter_traces(tmp_path))
    assert [(t.episode, t.agent) for t in traces] == [(0, "main"), (1, "main")]
    assert np.array_equal(traces[0].progress, [0.5])
    assert len(list(iter_traces(tmp_path, sub_agents=True))) == 3


def test_reflexion_attempts_are_measured_one_by_one(tmp_path):
    data = load_spec(SPEC).model_dump()
    data |= {"episodes": 10, "reflexion": {"attempts": 3, "keep": 2}}
    data["compare"] = [{"name": "pid", "params": {}}, {"name": "threshold", "params": {}}]
    run_experiment(parse_spec(data), tmp_path / "run")
    rows = list(iter_episodes(tmp_path / "run"))
    assert max(r["attempt"] for r in rows) > 1  # some seeds needed a second attempt
    traces = list(iter_traces(tmp_path / "run"))
    assert [(t.controller, t.episode, t.attempt, len(t)) for t in traces] == [
        (r["controller"], r["episode"], r["attempt"], r["steps"]) for r in rows
    ]
    analysis = analyze(tmp_path / "run")
    assert sum(m.episodes for m in analysis.controllers.values()) == len(rows)
    assert analysis.controllers["pid"].success.successes == sum(
        r["success"] for r in rows if r["controller"] == "pid"
    )


def test_report_redraws_figures_older_than_a_run_file(compared, tmp_path):
    import os
    import shutil

    from opar_sim.cli.report import figure_svgs

    out, _ = compared
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    figure_svgs(analyze(copy))  # drawn for no --episode if an earlier test drew another
    svgs, _, drawn = figure_svgs(analyze(copy))
    assert not drawn and svgs
    stamp = (copy / "figures" / "pareto.svg").stat().st_mtime
    os.utime(copy / "episodes.jsonl", (stamp + 10, stamp + 10))
    _, _, drawn = figure_svgs(analyze(copy))
    assert drawn
