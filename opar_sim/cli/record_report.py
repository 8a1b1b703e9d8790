"""The report of an imported record: one self-contained HTML page, no script.

An imported run (``traces import``) has no spec, no simulated clock and no hidden truth, so
the simulated run's report (figures over simulated time, the trace viewer) does not apply.
Its page shows what was imported (``source.json``: the format, whether per-step tokens
were recorded or estimated, the outcomes), the summary (success, pass^k), what the trace
laws of ``traces compare`` would do, and one row per run (its own id, outcome, turns, tool
calls, tool errors, tokens, wall time).  Every string from the run is escaped
(``TextTable.to_html``, ``html.escape``); the page runs no script and loads nothing.
"""

from __future__ import annotations

import html
import math
from collections import Counter
from pathlib import Path
from typing import Any

import opar_sim
from opar_sim.cli.page_safe import content_security_policy
from opar_sim.cli.report import asset
from opar_sim.measure.table import TextTable
from opar_sim.rundir import iter_episodes, iter_steps, read_json, write_bytes
from opar_sim.traces.compare import profile
from opar_sim.traces.runs import obj
from opar_sim.traces.stopping import parse_laws

LAWS = "steps:4,calls:4,calls:8,calls:12,repeat:2,repeat:3,errors:1"
SOURCE = "source.json"


def _num(value: Any, fmt: str) -> str:
    if not isinstance(value, int | float) or isinstance(value, bool) or math.isnan(value):
        return "–"
    return format(value, fmt)


def _tables(path: Path, source: dict[str, Any]) -> list[TextTable]:
    laws = parse_laws(LAWS)
    p = profile(path, laws)
    summary = [
        ["runs (tasks)", f"{p.runs} ({p.tasks})"],
        ["success rate", _num(p.success_rate, ".3f")],
        *([f"pass^{k + 1}", _num(v, ".3f")] for k, v in enumerate(p.pass_k)),
        [
            "turns, successes / failures",
            f"{_num(p.turns_success, '.2f')} / {_num(p.turns_failure, '.2f')}",
        ],
        ["tool errors a run", _num(p.errors_per_run, ".2f")],
    ]
    law_rows = [
        [
            r.law,
            "–" if not r.successes else f"{r.kept}/{r.successes}",
            _num(r.calls_saved.mean, ".0%"),
            str(r.fired),
        ]
        for r in p.laws
    ]
    errors: Counter[tuple[int, int]] = Counter()
    for step in iter_steps(path):
        if step.get("tool_error") is not None:
            errors[(step["episode"], step.get("trial", 1))] += 1
    ids = obj(source.get("ids"))
    runs = [
        [
            str(e["episode"]),
            str(ids.get(str(e["episode"]), "")),
            str(e.get("trial", 1)),
            str(e["outcome"]),
            str(e["steps"]),
            str(e["tool_calls"]),
            str(errors[(e["episode"], e.get("trial", 1))]),
            str(e["tokens"]),
            _num(e.get("wall_seconds"), ".2f"),
        ]
        for e in iter_episodes(path)
    ]
    return [
        TextTable("summary", ["", "value"], summary, [], left=1),
        TextTable(
            "trace laws on the record",
            ["law", "successes kept", "failed calls saved", "fired"],
            law_rows,
            ["replay RUNDIR --laws has the intervals"],
        ),
        TextTable(
            "runs",
            [
                "episode",
                "own id",
                "trial",
                "outcome",
                "turns",
                "tool calls",
                "tool errors",
                "tokens",
                "wall s",
            ],
            runs,
            [],
            left=4,
        ),
    ]


def render_record_report(path: Path) -> str:
    """The HTML text of an imported record's report."""
    source = read_json(path / SOURCE)
    source = source if isinstance(source, dict) else {}
    facts = [
        ("opar-sim", opar_sim.__version__),
        ("run directory", str(path.resolve())),
        ("format", str(source.get("format", "?"))),
        ("agents", ", ".join(sorted({str(e.get("agent")) for e in iter_episodes(path)}))),
        ("tasks", ", ".join(sorted({str(e.get("task")) for e in iter_episodes(path)}))),
        ("imported from", str(source.get("file", "?"))),
        ("tokens per step", str(source.get("step_tokens", "estimated (text length)"))),
        ("outcomes", ", ".join(f"{k} {v}" for k, v in (source.get("outcomes") or {}).items())),
    ]
    if source.get("unknown"):
        facts.append(("success", str(source["unknown"])))
    style = asset("report.css")
    title = f"opar-sim report: {path.name} (imported record)"
    parts = [
        "<!DOCTYPE html>",
        "<html lang='en'><head><meta charset='utf-8'>",
        f'<meta http-equiv="Content-Security-Policy" content="{content_security_policy("")}">',
        f"<title>{html.escape(title)}</title><style>\n{style}</style></head><body>",
        f"<header><h1>{html.escape(title)}</h1><dl class='meta'>",
        *(f"<dt>{html.escape(k)}</dt><dd><code>{html.escape(v)}</code></dd>" for k, v in facts),
        "</dl><p>A recorded run has no spec, no simulated clock and no hidden truth: the "
        "figures of a simulated run do not apply. docs/traces.md says what each format "
        "gives.</p></header>",
        *(
            f"<h2>{html.escape(t.title)}</h2><div class='table'>{t.to_html()}</div>"
            for t in _tables(path, source)
        ),
        "</body></html>\n",
    ]
    return "\n".join(parts)


def write_record_report(path: Path, out: Path) -> Path:
    """Write an imported record's report to ``out``; return the path."""
    out.parent.mkdir(parents=True, exist_ok=True)
    write_bytes(out, render_record_report(path).encode("utf-8"))
    return out
