"""What a spawned pool worker has imported (read by ``test_startup``)."""

from __future__ import annotations

import sys
from typing import Any

WATCHED = (
    "matplotlib",
    "ollama",
    "xllamacpp",
    "dask",
    "distributed",
    "optuna",
    "numba",
    "opar_sim.cli.commands",
    "rich",
    "scipy",
    "pandas",
    "opar_sim.analysis",
    "opar_sim.figures",
)


def loaded() -> list[str]:
    """The watched modules present in this process."""
    return [name for name in WATCHED if name in sys.modules]


def after_chunk(chunk: Any) -> list[str]:
    """Run a chunk of episodes as a pool worker does, then the watched modules present."""
    from opar_sim.running.chunks import run_chunk

    result = run_chunk(chunk)
    assert result.chunk == chunk
    return loaded()
