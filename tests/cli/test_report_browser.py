"""The report of a real ``compare`` run, opened in headless Chromium with the network off.

Debian's ``chromium`` (``/usr/bin/chromium``) driven by Playwright, which never
downloads a browser of its own here.  Without Chromium or Playwright the test
skips, saying which is missing; with ``OPAR_SIM_REQUIRE_BROWSER=1`` (the
Makefile's test line, after ``.ci/run`` installed Chromium) it fails instead.
The screenshot goes to ``$OPAR_SIM_SCREENSHOT`` when set, else to the test's
temporary directory.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from opar_sim.cli.main import main
from opar_sim.rundir import iter_episodes, iter_steps
from tests.browser import CHROMIUM, FLAGS, browser_or_skip
from tests.conftest import SPEC


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("browser") / "run"
    argv = ["compare", SPEC, "--controllers", "pid,threshold,oracle", "--episodes", "30"]
    with contextlib.redirect_stdout(io.StringIO()):
        assert main([*argv, "--out", str(out), "--workers", "1"]) == 0
        assert main(["replay", str(out), "--controller", "threshold"]) == 0
        assert main(["report", str(out)]) == 0
    return out


def test_report_renders_offline_and_opens_an_episode_trace(report: Path, tmp_path: Path):
    sync_api = browser_or_skip()
    page_file = report / "report.html"
    shot = Path(os.environ.get("OPAR_SIM_SCREENSHOT") or tmp_path / "report.png")
    errors: list[str] = []
    failed: list[str] = []
    outside: list[str] = []
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=CHROMIUM if Path(CHROMIUM).is_file() else shutil.which("chromium"),
            headless=True,
            args=FLAGS,
        )
        context = browser.new_context(offline=True, viewport={"width": 800, "height": 1000})

        def route(r: Any) -> None:
            if r.request.url.startswith("file://"):
                r.continue_()
            else:  # anything that would leave the file: recorded and refused
                outside.append(r.request.url)
                r.abort()

        context.route("**/*", route)
        page = context.new_page()
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("requestfailed", lambda r: failed.append(r.url))
        page.goto(page_file.as_uri())
        page.wait_for_load_state("load")

        # tables and figures fit an 800 px window: nothing scrolls sideways
        assert page.evaluate("document.documentElement.scrollWidth") <= 800
        overflowing = (
            "[...document.querySelectorAll('.table')]"
            ".filter(d => d.scrollWidth > d.clientWidth).length"
        )
        assert page.evaluate(overflowing) == 0

        # the legend toggles a controller in every figure
        page.click("nav#legend button[data-controller='threshold']")
        hidden = page.eval_on_selector_all(
            "[id*='-ctl--threshold--']", "els => els.map(e => e.style.opacity)"
        )
        assert hidden and set(hidden) == {"0.08"}
        page.click("nav#legend button[data-controller='threshold']")

        # the comparison table is linked to the Pareto plot
        page.hover(".table table tbody tr:nth-child(2)")
        assert page.eval_on_selector(
            "#fig-pareto [id*='-ctl--threshold--']", "e => e.style.filter"
        ).startswith("drop-shadow")

        # click an episode in the list: its trace, one row per step
        rows = {(r["controller"], r["episode"]): r for r in iter_episodes(report)}
        page.click("#episode-list tr[data-key='pid|4|1|1']")
        page.wait_for_selector("#trace table tbody tr")
        assert page.locator("#trace table tbody tr").count() == rows[("pid", 4)]["steps"]
        assert "pid, episode 4" in page.inner_text("#trace-title")
        assert "REPLAN threshold" in page.inner_text("#trace")
        step1 = next(
            r
            for r in iter_steps(report)
            if (r["controller"], r["episode"], r["step"]) == ("pid", 4, 1)
        )
        first = page.inner_text("#trace table tbody tr:first-child")
        assert f"{step1['delta_task']:.3f} / {step1['progress']:.3f}" in first
        assert step1["action"] in first and step1["signal"].upper() in first

        # click the signal raster: the first row of the threshold panel is its first episode
        box = page.evaluate(
            """() => { const d = JSON.parse(document.getElementById('report-data').textContent);
            const svg = document.querySelector('svg[data-fig=signals]');
            svg.scrollIntoView(); const r = svg.getBoundingClientRect();
            const [x0, y0, w, h] = d.raster.threshold.box; const n = d.raster.threshold.rows.length;
            return {x: r.left + (x0 + w / 2) * r.width,
                    y: r.top + (1 - (y0 + h - h / (2 * n))) * r.height,
                    first: d.raster.threshold.rows[0]}; }"""
        )
        page.mouse.click(box["x"], box["y"])
        episode = box["first"][0]
        assert f"threshold, episode {episode}" in page.inner_text("#trace-title")

        # a replayed episode: recorded against counterfactual, the first divergence framed
        diverged = page.evaluate(
            """() => { const d = JSON.parse(document.getElementById('report-data').textContent);
            const k = Object.keys(d.replays).find(k => k.startsWith('pid|') &&
              d.replays[k].some(r => r.verdict !== 'same'));
            return k || null; }"""
        )
        assert diverged is not None
        page.evaluate("k => window.oparOpenTrace(k)", diverged)
        assert page.locator("#trace tr.diverge").count() == 1
        at_step = page.evaluate(
            "k => JSON.parse(document.getElementById('report-data').textContent)"
            ".replays[k][0].at_step",
            diverged,
        )
        assert page.inner_text("#trace tr.diverge td:first-child").strip() == str(at_step)
        assert "first divergence" in page.inner_text("#trace tr.diverge")
        assert "threshold (replay: counterfactual)" in page.inner_text("#trace thead")
        assert page.evaluate(overflowing) == 0  # the trace table fits too

        page.evaluate("k => window.oparOpenTrace(k)", "pid|4|1|1")
        page.screenshot(path=str(shot), full_page=False)
        browser.close()
    assert errors == []
    assert failed == []
    assert outside == []
    assert shot.stat().st_size > 10_000
