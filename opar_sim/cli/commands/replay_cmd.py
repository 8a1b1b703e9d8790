"""``opar-sim replay RUNDIR --controller NAME | --laws LAWS``: other stopping on a recorded run.

No model is called.  ``--controller``: the recorded evaluations of a simulated run are
re-decided (see ``opar_sim.traces.replay``); writes ``RUNDIR/replay_NAME.jsonl``, one
line per episode.  ``--laws``: laws that read only what a trace shows (caps, repeated
calls, tool errors, hand-offs; ``opar_sim.traces.stopping``) cut each recorded run,
exactly, on imported and simulated runs alike; prints the frontier table, writes
``RUNDIR/replay_laws.json`` and draws ``RUNDIR/frontier.png``.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rich.console import Console

import controllers
from opar_sim.cli.commands.common import UsageError
from opar_sim.cli.tables import TextTable
from opar_sim.rundir import file_stem, to_line, write_bytes, write_json
from opar_sim.traces.recorded import load_run
from opar_sim.traces.replay import exactness, replay, tally
from opar_sim.traces.stopping import DEFAULT_LAWS, SIGNALS, UNOBSERVABLE, evaluate, load_costs
from opar_sim.traces.stopping import parse_laws as parse_stopping_laws

NAME = "replay"
HELP = "re-decide a recorded run under another controller, without calling the model"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The run directory, and ``--controller`` (a registered controller) or ``--laws``."""
    parser.add_argument("rundir", help="a run directory (simulated, or imported by traces)")
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--controller", help="a registered controller (see list); simulated runs")
    what.add_argument(
        "--laws",
        nargs="?",
        const=DEFAULT_LAWS,
        help="comma-separated trace laws SIGNAL:K, combined with + (first to fire), e.g. "
        f"calls:10,repeat:2,errors:1+calls:12; signals: {', '.join(SIGNALS)} "
        "(--laws alone: a default set)",
    )
    parser.add_argument(
        "--of", dest="of", metavar="CONTROLLER", help="with --laws: whose runs (a run of several)"
    )


def run(args: argparse.Namespace, console: Console) -> int:
    """Replay every recorded episode under the controller and tabulate the verdicts.

    Writes ``RUNDIR/replay_NAME.jsonl`` (one line per episode) and prints the
    count of each verdict, how many are checkable (``same`` and ``stop``, whose outcome is
    known) and uncheckable (``replan`` and ``continue``), and the outcomes, recorded
    against replayed.  A run whose verdicts cannot be exact (guards, Reflexion) is named.

    Returns:
        0; an unknown controller is a usage error (exit 2).
    """
    if args.laws is not None:
        return run_laws(args, console)
    recorded = load_run(args.rundir, need_steps=True)
    try:
        controllers.make(args.controller)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    replayed = replay(recorded, lambda: controllers.make(args.controller))
    out = recorded.path / f"replay_{file_stem(args.controller)}.jsonl"
    lines = "".join(to_line(r.to_dict()) for r in replayed)
    write_bytes(out, lines.encode("utf-8"), inside=recorded.path)
    counts = tally(replayed)
    verdicts, outcomes = _verdict_tables(counts, args.controller)
    console.print(verdicts)
    checkable = counts["checkable"]
    console.print(
        f"checkable (outcome known): {checkable['checkable']}, "
        f"uncheckable (diverged, outcome unknown): {checkable['uncheckable']}",
        highlight=False,
    )
    inexact = exactness(recorded.spec)
    if inexact is not None:
        console.print(f"note: verdicts are not exact: {inexact}", highlight=False)
    console.print(outcomes)
    console.print(f"wrote {out}", highlight=False)
    return 0


def _verdict_tables(counts: Any, controller: str) -> tuple[TextTable, TextTable]:
    """The verdicts' table and the outcomes' (recorded against replayed under ``controller``)."""
    verdicts = [[verdict, str(n)] for verdict, n in sorted(counts["verdicts"].items())]
    names = sorted(set(counts["recorded"]) | set(counts["outcomes"]))
    rows = [[n, str(counts["recorded"][n]), str(counts["outcomes"][n])] for n in names]
    return (
        TextTable(f"replayed under {controller}", ["verdict", "episodes"], verdicts, []),
        TextTable("outcomes", ["outcome", "recorded", controller], rows, []),
    )


def _share(e: Any) -> str:
    return f"{e.mean:.3f} [{e.low:.3f}, {e.high:.3f}]"


def _frontier_table(runs: Any, results: Any) -> TextTable:
    """The trace laws' frontier: successes kept against calls and turns saved."""
    tasks = len({r.task for r in runs})
    rows = [
        [
            r.law,
            f"{r.kept}/{r.successes}",
            _share(r.kept_share),
            _share(r.calls_saved),
            _share(r.turns_saved),
            str(r.fired),
        ]
        for r in results
    ]
    notes = [
        f"{len(runs)} runs of {tasks} tasks; intervals: 95 % bootstrap over tasks (2000 resamples)",
        "a success is kept when the stop comes at or after the turn that decided it "
        "(imported: its last tool call; simulated: its last step)",
        "saved: share of the failed runs' tool calls / turns cut off; fired: runs stopped early",
    ]
    columns = ["law", "kept", "successes kept", "calls saved (fail)", "turns saved (fail)", "fired"]
    return TextTable("trace laws, replayed exactly", columns, rows, notes)


def run_laws(args: argparse.Namespace, console: Console) -> int:
    """Replay the trace laws on every recorded run and print the frontier table.

    Returns:
        0; a malformed law or a directory that is not a run exits 2.
    """
    laws = parse_stopping_laws(args.laws)
    runs = load_costs(args.rundir, args.of)
    results = evaluate(runs, laws)
    console.print(_frontier_table(runs, results))
    console.print(
        "registered controllers that cannot run on trace signals: "
        + "; ".join(f"{name} ({why})" for name, why in UNOBSERVABLE.items()),
        highlight=False,
    )
    path = Path(args.rundir)
    write_json(path / "replay_laws.json", [r.to_dict() for r in results])
    from opar_sim.figures.frontier import frontier_figure  # matplotlib only when drawing

    png = frontier_figure(results, path / "frontier.png", f"stopping frontier: {path.name}")
    console.print(f"wrote {path / 'replay_laws.json'} and {png}", highlight=False)
    return 0
