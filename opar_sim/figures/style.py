"""What every figure shares: headless backend, one colour per controller and outcome."""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from opar_sim.rundir import write_bytes

SIGNAL_COLORS = {"continue": "#cfd8dc", "replan": "#e6550d", "terminate": "#08519c"}

OUTCOME_COLORS = {
    "success": "#31a354",
    "premature": "#de2d26",
    "gave_up": "#756bb1",
    "abandoned": "#c51b8a",
}
_TRUNCATED = ["#fd8d3c", "#fdae6b", "#fdd0a2", "#a63603", "#e6550d"]
_ERROR = ["#636363", "#969696", "#bdbdbd"]


def new_figure(rows: int, cols: int, **kwargs: Any) -> tuple[Figure, Any]:
    """A figure with constrained layout (no overlapping labels) and its axes."""
    kwargs.setdefault("squeeze", True)
    fig, axes = plt.subplots(rows, cols, layout="constrained", **kwargs)
    return fig, axes


def controller_colors(names: Sequence[str]) -> dict[str, str]:
    """One colour per controller, in run order, the same in every figure."""
    cycle = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    return {name: cycle[k % len(cycle)] for k, name in enumerate(names)}


def outcome_color(outcome: str, order: Sequence[str]) -> str:
    """Green for success, red for premature, purple for gave_up, magenta for abandoned.

    Truncations take oranges and errors greys, by their place in ``order``.
    """
    if outcome in OUTCOME_COLORS:
        return OUTCOME_COLORS[outcome]
    palette = _TRUNCATED if outcome.startswith("truncated") else _ERROR
    same = [o for o in order if o.split(":")[0] == outcome.split(":")[0]]
    return palette[same.index(outcome) % len(palette)] if outcome in same else palette[0]


def outcome_order(outcomes: Sequence[str]) -> list[str]:
    """Success first, then premature, gave_up and abandoned, then truncations and errors."""
    rank = {"success": 0, "premature": 1, "gave_up": 2, "abandoned": 3}

    def key(o: str) -> tuple[int, str]:
        head = o.split(":")[0]
        return (rank.get(o, 4 if head == "truncated" else 5), o)

    return sorted(set(outcomes), key=key)


def padded(series: Sequence[Sequence[float] | np.ndarray]) -> np.ndarray:
    """Stack ragged per-episode series, holding each one's last value."""
    length = max((len(s) for s in series), default=0)
    out = np.zeros((len(series), length + 1))
    for row, s in enumerate(series):
        values = np.concatenate(([0.0], np.asarray(s, dtype=float)))
        out[row, : len(values)] = values
        out[row, len(values) :] = values[-1]
    return out


def save(fig: Figure, path_stem: str, *, svg: bool = False) -> list[str]:
    """Save a figure as PNG (and SVG with ``svg``), close it; return the paths written.

    Args:
        fig: The figure; it is closed afterwards.
        path_stem: The file path without its extension.
        svg: Also write a reproducible SVG (no date, fixed id salt).

    Returns:
        The paths written, PNG first.
    """
    png = f"{path_stem}.png"
    buffer = io.BytesIO()  # drawn in memory, written by the one checked writer (no link followed)
    fig.savefig(buffer, format="png", dpi=110)
    write_bytes(Path(png), buffer.getvalue())
    paths = [png]
    if svg:
        # the PNG's draw placed every axes: keep those places rather than lay out again
        # (the constrained layout is a third of a save)
        fig.set_layout_engine("none")
        # no creation date and a fixed id salt: the same figure gives the same bytes
        buffer = io.BytesIO()
        with plt.rc_context({"svg.hashsalt": "opar-sim"}):
            fig.savefig(buffer, format="svg", metadata={"Date": None})
        write_bytes(Path(f"{path_stem}.svg"), buffer.getvalue())
        paths.append(f"{path_stem}.svg")
    plt.close(fig)
    return paths
