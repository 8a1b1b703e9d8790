"""A run as one self-contained HTML page: tables, figures (embedded PNG), the spec.

Nothing is linked: the page opens offline and can be attached to a message.
"""

from __future__ import annotations

import base64
import html
import io
from pathlib import Path

import matplotlib.pyplot as plt

from opar_sim.analysis.run import RunAnalysis
from opar_sim.cli.tables import (
    analysis_outcomes,
    comparison_table,
    outcome_table,
    response_table,
)
from opar_sim.figures import build_figures

CAPTIONS = {
    "convergence": "Median true progress (solid, interquartile band) and the agent's own "
    "estimate δ_task (dashed), against loop iterations and against simulated seconds. Where the "
    "dashed line runs above the solid one the agent believes it is further along than it is.",
    "signals": "Each row is an episode, each column a loop iteration, coloured by the Reflect "
    "decision. Dense REPLAN stripes are thrashing (a relay limit cycle); an early TERMINATE "
    "in an episode that failed is a premature stop.",
    "pid_terms": "One episode of a controller with an effort term: the error it saw and the true "
    "error (top); P, I, D and the effort against the REPLAN threshold (bottom).",
    "phase": "The estimated error against its trend, step by step: converging loops run into "
    "the origin, oscillating ones circle.",
    "outcomes": "Outcomes judged from the hidden ground truth, as a share of episodes.",
    "pareto": "Mean tokens per episode against success rate with 95 % intervals; the ringed "
    "controllers are not beaten on both cost and success by any other.",
}

STYLE = """
body { font-family: system-ui, sans-serif; max-width: 1200px; margin: 2em auto; color: #222; }
table { border-collapse: collapse; margin: 1em 0 0.3em; font-size: 0.9em; }
caption { text-align: left; font-weight: bold; padding-bottom: 0.3em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: right; }
th:first-child, td:first-child { text-align: left; font-weight: bold; }
ul.notes { font-size: 0.8em; color: #555; margin-top: 0; }
figure { margin: 1.5em 0; } figure img { max-width: 100%; border: 1px solid #eee; }
figcaption { font-size: 0.9em; color: #444; }
pre { background: #f6f6f6; padding: 1em; overflow-x: auto; font-size: 0.8em; }
"""


def _png_base64(fig: object) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100)  # type: ignore[attr-defined]
    plt.close(fig)  # type: ignore[arg-type]
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def render_report(
    analysis: RunAnalysis, *, controller: str | None = None, episode: int | None = None
) -> str:
    """The HTML text of the report."""
    spec = analysis.spec
    name = spec.name if spec is not None else analysis.path.name
    parts = [
        "<!DOCTYPE html>",
        "<html lang='en'><head><meta charset='utf-8'>",
        f"<title>opar-sim report: {html.escape(name)}</title>",
        f"<style>{STYLE}</style></head><body>",
        f"<h1>opar-sim report: {html.escape(name)}</h1>",
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
    parts.append("<h2>Results</h2>")
    for table in (
        comparison_table(analysis),
        response_table(analysis),
        outcome_table(analysis_outcomes(analysis)),
    ):
        parts.append(table.to_html())
    parts.append("<h2>Figures</h2>")
    figures = build_figures(analysis, controller=controller, episode=episode).figures
    for stem, fig in figures.items():
        data = _png_base64(fig)
        caption = html.escape(CAPTIONS.get(stem, stem))
        parts.append(
            f"<figure id='{stem}'><img alt='{stem}' src='data:image/png;base64,{data}'>"
            f"<figcaption>{caption}</figcaption></figure>"
        )
    parts.append("<h2>The spec</h2>")
    if spec is not None:
        parts.append(f"<pre>{html.escape(spec.model_dump_json(indent=2), quote=False)}</pre>")
    else:
        parts.append("<p>spec.json is missing or unreadable.</p>")
    parts.append(f"<h2>Run directory</h2><p><code>{html.escape(str(analysis.path))}</code></p>")
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
    figure as an embedded PNG, and the spec.

    Args:
        analysis: The run's analysis.
        out: The HTML file (its directory is created if missing).
        controller: The controller of the PID-terms figure (see ``build_figures``).
        episode: The episode of the PID-terms figure.

    Returns:
        ``out``.
    """
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render_report(analysis, controller=controller, episode=episode), "utf-8")
    return out
