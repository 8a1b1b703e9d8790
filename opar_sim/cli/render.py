"""Terminal output with rich: the progress bars (tables are ``tables.TextTable``)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from opar_sim.spec.schema import ExperimentSpec


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


def is_llm(spec: ExperimentSpec) -> bool:
    """Whether the spec's agent calls a real language model."""
    return spec.agent.kind == "llm" or spec.agent.backend is not None


LAST_CHARS = 60  # of the last action shown on the live line


@contextmanager
def llm_steps(bar: Progress, console: Console) -> Iterator[None]:
    """Live progress of LLM episodes: a line per phase on the bar, one printed per step.

    The bar's status line shows the step, the phase that just finished, the
    episode's tokens and the last action; after each step's evaluation a line
    with the same is printed, so logs and CI show it too.
    """
    from opar_sim.agents.llm import LLMProgress, progress_listener

    status = bar.add_task("", total=None, visible=False)

    def show(e: LLMProgress) -> None:
        last = e.last if len(e.last) <= LAST_CHARS else e.last[: LAST_CHARS - 1] + "…"
        cached = " (cached plan)" if e.cache_hit else ""
        line = f"step {e.episode_step} {e.phase}{cached}: {e.tokens} tokens; last: {last or '-'}"
        bar.update(status, description=line, visible=True)
        if e.phase == "evaluate":
            console.print(f"  {line}", markup=False, highlight=False)

    with progress_listener(show):
        yield
