r"""A run as one self-contained, interactive HTML page: figures, tables, episode traces, the spec.

Nothing is linked: the page opens offline and can be attached to a message.
The figures are the vector SVGs that ``plot`` (or ``compare``) already wrote
under RUNDIR/figures, inlined with their ids prefixed per figure; they are
drawn only when that directory lacks them, was drawn for other options, is
older than one of the run's files (spec.json, episodes.jsonl, steps.jsonl), or
holds an index or an SVG the code did not write (``figure_svgs``).  A small
script (``assets/report.js``, plain JavaScript, no library, no network) adds
the interaction: hover tool tips, controllers toggled from the legend bar, the
comparison table linked to the Pareto plot, and the episode trace viewer fed by
the episodes' steps embedded once as compact columns (``report_traces.trace_data``).  It
reads the JSON the report embeds (``report-data``) and the inline SVG figures,
whose artists carry ids of the form ``<figure>-ctl--<controller>--...`` and
``<figure>-raster--<controller>`` (set as matplotlib gids by the figure code).
The script and its style sheet (``assets/report.css``) are package data files,
read with ``importlib.resources`` (``asset``).

A run directory is shared (a colleague's tarball, a vendor's export), so every
string in it is data, never markup (issue 31): text and attributes are escaped;
the JSON is embedded with ``<``, ``>``, ``&``, U+2028 and U+2029 written as
``\uXXXX`` (``page_safe.json_script``); an SVG read from the run directory is parsed
and rewritten to the drawing elements and attributes matplotlib writes, its
references local (``inline_svg``); figure stems and raster rows of
``figures.json`` are checked against what the code writes (``valid_index``);
and a Content-Security-Policy lets only the page's own script run, by its hash,
with no inline event handler (``content_security_policy``).  The script builds
its elements with ``textContent``, never ``innerHTML`` with data.
"""

from __future__ import annotations

import datetime as dt
import html
import math
import subprocess
from collections.abc import Iterable
from importlib.resources import files
from pathlib import Path
from typing import Any

import opar_sim
from opar_sim.cli.page_safe import content_security_policy, inline_svg, json_script
from opar_sim.cli.report_traces import num as _num
from opar_sim.cli.report_traces import trace_data
from opar_sim.cli.tables import (
    analysis_outcomes,
    comparison_table,
    outcome_table,
    response_table,
)
from opar_sim.figures import (
    CAPTIONS,
    FIGURE_DIR,
    read_index,
    thresholds,
    write_figures,
)
from opar_sim.measure.run import RunAnalysis
from opar_sim.rundir import (
    EPISODES_FILE,
    SPEC_FILE,
    STEPS_FILE,
    STEPS_PARQUET,
    write_bytes,
)
from opar_sim.rundir import rows as checked_rows

REPLAY_GLOB = "replay_*.jsonl"
ASSETS = "assets"  # beside this module: the page's style sheet and script


def asset(name: str) -> str:
    """The text of one of the page's package data files (``report.css``, ``report.js``)."""
    return (files("opar_sim.cli") / ASSETS / name).read_text(encoding="utf-8")


def replay_data(path: Path) -> dict[str, list[dict[str, Any]]]:
    """Per recorded episode key, what each replayed controller would have done.

    ``opar-sim replay`` writes ``replay_<controller>.jsonl`` into the run directory:
    one verdict per recorded episode with the step of the first disagreement.
    """
    out: dict[str, list[dict[str, Any]]] = {}
    for file in sorted(path.glob(REPLAY_GLOB)):
        controller = file.stem.removeprefix("replay_")
        for row in checked_rows(file):  # typed: a damaged line is named, never a KeyError
            key = f"{row['recorded_controller']}|{row['episode']}|1|1"
            out.setdefault(key, []).append(
                {
                    "controller": controller,
                    "verdict": row.get("verdict"),
                    "at_step": row.get("at_step"),
                    "outcome": row.get("outcome"),
                }
            )
    return out


def _git_commit() -> str | None:
    """The commit of the opar-sim checkout this code runs from, when it is one."""
    root = Path(opar_sim.__file__).resolve().parent.parent
    try:
        done = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    dirty = subprocess.run(
        ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
        capture_output=True,
        text=True,
        timeout=5,
        check=False,
    )
    return done.stdout.strip() + (" (with uncommitted changes)" if dirty.stdout.strip() else "")


def _without_none(value: Any) -> Any:
    """``value`` with every None dropped (TOML has no null)."""
    if isinstance(value, dict):
        return {k: _without_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_none(v) for v in value if v is not None]
    return value


def spec_toml(analysis: RunAnalysis) -> str:
    """The run's spec as TOML (what ``run`` reads back); unset (null) keys are left out.

    Raises:
        SystemExit: via the caller when ``tomli-w`` is missing (it is a dependency).
    """
    import tomli_w

    if analysis.spec is None:
        return ""
    return tomli_w.dumps(_without_none(analysis.spec.model_dump(mode="json")))


SVG_CEILING = 64 * 2**20
"""Bytes of the largest SVG reused from a run directory (a larger one is drawn afresh)."""

KNOWN_FIGURES = frozenset(CAPTIONS)
"""The figure stems the code draws (``build_figures``): no other name reaches the page."""


def _finite(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def valid_index(index: object, controllers: Iterable[str]) -> bool:
    """Whether ``figures.json`` is one the code wrote for this run's controllers.

    Its figures are known stems, each once; its raster holds, per controller of
    the run, rows of three integers and a box of four finite numbers (or none).
    """
    if not isinstance(index, dict):
        return False
    stems = index.get("figures")
    if not isinstance(stems, list) or not stems or len(set(map(str, stems))) != len(stems):
        return False
    if not all(isinstance(s, str) and s in KNOWN_FIGURES for s in stems):
        return False
    raster = index.get("raster", {})
    if not isinstance(raster, dict) or not set(raster) <= set(controllers):
        return False
    for info in raster.values():
        if not isinstance(info, dict) or not isinstance(info.get("rows"), list):
            return False
        for row in info["rows"]:
            if not isinstance(row, list) or len(row) != 3:
                return False
            if not all(isinstance(v, int) and not isinstance(v, bool) for v in row):
                return False
        box = info.get("box")
        if box is not None and not (
            isinstance(box, list) and len(box) == 4 and all(_finite(v) for v in box)
        ):
            return False
    return True


def figure_svgs(
    analysis: RunAnalysis, *, controller: str | None = None, episode: int | None = None
) -> tuple[dict[str, str], dict[str, Any], bool]:
    """The run's figures as SVG elements safe to inline, with their index; drawn only when needed.

    The figures under RUNDIR/figures are reused when drawn for these options,
    no older than the run's files, listed in an index the code could have
    written (``valid_index``) and parsed as SVG; otherwise they are drawn
    afresh.  Either way every SVG goes through ``inline_svg``: a file in a
    shared run directory is never trusted.

    Returns:
        (the inline SVG per figure stem, the figure index, whether they were drawn now).
    """
    folder = analysis.path / FIGURE_DIR
    options = {"controller": controller, "episode": episode}
    names = [*analysis.controllers, *analysis.traces]  # the raster's panels are of these
    index = read_index(folder)
    # the files the figures are drawn from: figures older than any of them are stale
    files = (SPEC_FILE, EPISODES_FILE, STEPS_FILE, STEPS_PARQUET)
    sources = [analysis.path / name for name in files]
    newest = max((f.stat().st_mtime for f in sources if f.is_file()), default=0.0)

    def reused(ix: dict[str, Any] | None) -> dict[str, str] | None:
        if ix is None or ix.get("options") != options or not valid_index(ix, names):
            return None
        files = [folder / f"{stem}.svg" for stem in ix["figures"]]
        if not all(f.is_file() and f.stat().st_size <= SVG_CEILING for f in files):
            return None
        if min(f.stat().st_mtime for f in files) < newest:
            return None
        try:
            return {f.stem: inline_svg(f.read_text("utf-8"), f.stem) for f in files}
        except (OSError, ValueError):  # damaged, or not an SVG: drawn afresh
            return None

    svgs = reused(index)
    drawn = svgs is None
    if svgs is None:
        write_figures(analysis, folder, controller=controller, episode=episode)
        index = read_index(folder)
        if index is None or not valid_index(index, names):
            raise RuntimeError(f"{folder}: the figures just drawn have no usable index")
        svgs = {
            stem: inline_svg((folder / f"{stem}.svg").read_text("utf-8"), stem)
            for stem in index["figures"]
        }
    assert index is not None
    return svgs, index, drawn


def _metrics(analysis: RunAnalysis) -> dict[str, dict[str, Any]]:
    out = {}
    for name, m in analysis.controllers.items():
        replan, band = thresholds(analysis, name)
        out[name] = {
            "n": m.episodes,
            "success": _num(m.success.rate, 4),
            "low": _num(m.success.low, 4),
            "high": _num(m.success.high, 4),
            "tokens": _num(m.tokens.mean, 0),
            "steps": _num(m.steps.mean, 2),
            "replans": _num(m.replans.mean, 2),
            "premature": _num(m.premature_share, 4),
            "replan_threshold": replan,
            "settle_band": band,
        }
    return out


# JSON inside <script>: no character that could end the element, open a comment or break
# a line of script; JSON.parse reads the escapes back
def _table_html(tables: Iterable[Any]) -> str:
    return "".join(f"<div class='table'>{t.to_html()}</div>" for t in tables)


def render_report(
    analysis: RunAnalysis,
    *,
    controller: str | None = None,
    episode: int | None = None,
    now: dt.datetime | None = None,
) -> str:
    """The HTML text of the report.

    Args:
        analysis: The run's analysis.
        controller: The controller of the PID-terms figure (see ``build_figures``).
        episode: The episode of the PID-terms figure.
        now: The date written in the header (default: now, UTC).

    Returns:
        One self-contained HTML document.
    """
    spec = analysis.spec
    name = spec.name if spec is not None else analysis.path.name
    when = (now or dt.datetime.now(dt.UTC)).strftime("%Y-%m-%d %H:%M UTC")
    commit = _git_commit()
    names = list(analysis.controllers)
    from matplotlib.colors import to_hex

    from opar_sim.figures.style import controller_colors

    colors = {n: to_hex(c) for n, c in controller_colors(names).items()}
    svgs, index, _ = figure_svgs(analysis, controller=controller, episode=episode)
    data = {
        "controllers": names,
        "colors": colors,
        "metrics": _metrics(analysis),
        "raster": index.get("raster", {}),
        "replays": replay_data(analysis.path),
        **trace_data(analysis.path),
    }
    meta = [
        ("opar-sim", opar_sim.__version__),
        ("commit", commit or "unknown (not run from a git checkout)"),
        ("report written", when),
        ("run directory", str(analysis.path.resolve())),
    ]
    script = f"\n{asset('report.js')}"  # the one script that runs: the policy names its hash
    assert "</script" not in script.lower()
    parts = [
        "<!DOCTYPE html>",
        "<html lang='en'><head><meta charset='utf-8'>",
        # the policy is made of quotes, keywords and base64: nothing to escape
        f'<meta http-equiv="Content-Security-Policy" content="{content_security_policy(script)}">',
        "<meta name='viewport' content='width=device-width, initial-scale=1'>",
        f"<title>opar-sim report: {html.escape(name)}</title>",
        f"<style>\n{asset('report.css')}</style></head><body>",
        f"<header><h1>opar-sim report: {html.escape(name)}</h1><dl class='meta'>",
        *(f"<dt>{html.escape(k)}</dt><dd><code>{html.escape(v)}</code></dd>" for k, v in meta),
        "</dl>",
    ]
    if spec is not None:
        controllers = ", ".join(c.name for c in spec.controller_list())
        parts.append(
            f"<p>{html.escape(spec.description)}</p><p>task <b>{html.escape(spec.task.name)}</b>, "
            f"controllers <b>{html.escape(controllers)}</b>, {spec.episodes} episodes each"
            f"{f' × {spec.trials} trials' if spec.trials > 1 else ''} on "
            f"common seeds (seed {spec.seed}); limits: {spec.limits.max_steps} steps, "
            f"{spec.limits.time_budget:g} simulated s, {spec.limits.token_budget:,} tokens.</p>"
        )
    parts.append("</header>")
    parts.append(
        "<nav id='legend' aria-label='controllers'><span>controllers (click to hide or "
        "show in every figure):</span></nav>"
    )
    parts.append("<h2>Results</h2>")
    parts.append(
        "<p class='hint'>Hover a row of the comparison to find the controller in the "
        "Pareto plot; click it to jump there.</p>"
    )
    parts.append(
        _table_html(
            (
                comparison_table(analysis),
                response_table(analysis),
                outcome_table(analysis_outcomes(analysis)),
            )
        )
    )
    parts.append("<h2>Figures</h2>")
    for stem, svg in svgs.items():  # known stems (valid_index), SVGs rewritten (inline_svg)
        caption = CAPTIONS[stem]
        parts.append(
            f"<figure id='fig-{html.escape(stem)}'>{svg}"
            f"<figcaption><b>{html.escape(stem)}.</b> {html.escape(caption)}</figcaption>"
            "</figure>"
        )
    parts.append(
        "<h2 id='episodes'>Episodes</h2><p class='hint'>Click an episode (here or a row of "
        "the signal raster) to open its trace.</p><div id='episode-filter'></div>"
        "<div id='episode-list' class='scroll'></div>"
        "<h2 id='trace-title'>Episode trace</h2><div id='trace'><p class='hint'>No episode "
        "chosen yet.</p></div>"
    )
    parts.append("<h2>The spec</h2>")
    if spec is not None:
        parts.append(f"<pre id='spec'>{html.escape(spec_toml(analysis), quote=False)}</pre>")
    else:
        parts.append("<p>spec.json is missing or unreadable.</p>")
    parts.append("<div id='tip' role='tooltip'></div>")
    parts.append(json_script("report-data", data))
    parts.append(f"<script>{script}</script>")
    parts.append("</body></html>\n")
    return "\n".join(parts)


def write_report(
    analysis: RunAnalysis,
    out: Path,
    *,
    controller: str | None = None,
    episode: int | None = None,
) -> Path:
    """Write the report to ``out``; return the path.

    The page holds the comparison, step-response and outcome tables, every
    figure as inline SVG (the ones under RUNDIR/figures, drawn first if absent),
    every episode's trace, and the spec as TOML.

    Args:
        analysis: The run's analysis.
        out: The HTML file (its directory is created if missing).
        controller: The controller of the PID-terms figure (see ``build_figures``).
        episode: The episode of the PID-terms figure.

    Returns:
        ``out``.
    """
    out.parent.mkdir(parents=True, exist_ok=True)
    page = render_report(analysis, controller=controller, episode=episode)
    write_bytes(out, page.encode("utf-8"))
    return out
