"""Terminal output with rich: the summary table and the progress bar."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table


def progress_bar(console: Console, unit: str = "episodes") -> Progress:
    """A progress bar with count, elapsed time and ETA."""
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn(unit),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=console,
        transient=False,
    )


def summary_table(summary: Mapping[str, Mapping[str, Any]], title: str) -> Table:
    """One row per controller: success with its 95 % interval and the mean costs."""
    table = Table(title=title, title_justify="left")
    table.add_column("controller", style="bold")
    table.add_column("n", justify="right")
    table.add_column("success (95% CI)", justify="right")
    table.add_column("steps", justify="right")
    table.add_column("tokens", justify="right")
    table.add_column("sim s", justify="right")
    table.add_column("replans", justify="right")
    for name, s in summary.items():
        lo, hi = s["success_ci95"]
        table.add_row(
            name,
            str(s["episodes"]),
            f"{s['success_rate']:.1%} ({lo:.1%}-{hi:.1%})",
            f"{s['mean_steps']:.1f}",
            f"{s['mean_tokens']:,.0f}",
            f"{s['mean_sim_seconds']:.1f}",
            f"{s['mean_replans']:.2f}",
        )
    return table


def outcome_table(summary: Mapping[str, Mapping[str, Any]]) -> Table:
    """Episodes per outcome (rows) and controller (columns)."""
    table = Table(title="outcomes (episodes)", title_justify="left")
    table.add_column("outcome", style="bold")
    names = list(summary)
    for name in names:
        table.add_column(name, justify="right")
    kinds = sorted({k for s in summary.values() for k in s["outcomes"]})
    for kind in kinds:
        table.add_row(kind, *(str(summary[n]["outcomes"].get(kind, 0)) for n in names))
    return table
