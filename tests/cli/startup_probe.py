"""What a spawned pool worker has imported (read by ``test_startup``)."""

from __future__ import annotations

import sys

WATCHED = (
    "matplotlib",
    "ollama",
    "llama_cpp",
    "dask",
    "distributed",
    "optuna",
    "opar_sim.cli.commands",
)


def loaded() -> list[str]:
    """The watched modules present in this process."""
    return [name for name in WATCHED if name in sys.modules]
