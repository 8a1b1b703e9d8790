"""The command line's drawing of a protocol's stages (``opar_sim.running.stages``).

A stage with a total is a progress bar (``render.progress_bar``); one without is a
spinner with its label (rich's ``status``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console

from opar_sim.cli.render import progress_bar
from opar_sim.running.stages import Advance, Stage, no_stage


def stages(console: Console, unit: str = "episodes") -> Stage:
    """A ``Stage`` that draws on ``console``: a bar counting ``unit``, or a spinner."""

    @contextmanager
    def stage(label: str, total: int | None) -> Iterator[Advance]:
        if total is None:
            with console.status(label), no_stage(label, total) as ignore:
                yield ignore
            return
        with progress_bar(console, unit=unit) as bar:
            job = bar.add_task(label, total=total)
            yield lambda n: bar.advance(job, n)

    return stage


__all__ = ["stages"]
