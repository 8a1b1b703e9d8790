"""Parameter sweeps: a grid over any spec path, every point on the same seed set.

A spec's ``[sweep]`` table maps a dotted path (``controller.params.kp``,
``agent.params.bias``, ``limits.max_steps`` ...) to its values: a list, a
linear range ``{ start, stop, num }`` or a log range ``{ start, stop, num,
log = true }``.  The grid is their product, in the order written.  Every
point keeps the spec's seed, so points are compared on paired samples.
"""

from __future__ import annotations

import copy
import itertools
import math
import re
from dataclasses import dataclass
from typing import Annotated, Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, model_validator

Scalar = float | int | str | bool


class SweepRange(BaseModel):
    """Evenly spaced values from ``start`` to ``stop`` (inclusive); geometric with ``log``."""

    model_config = ConfigDict(extra="forbid")

    start: float
    stop: float
    num: int = Field(ge=2, le=1000)
    log: bool = False

    @model_validator(mode="after")
    def _positive_for_log(self) -> SweepRange:
        if self.log and (self.start <= 0 or self.stop <= 0):
            raise ValueError("a log range needs start > 0 and stop > 0")
        return self

    def values(self) -> list[float]:
        """The range's ``num`` points, rounded to 12 significant digits."""
        if self.log:
            grid = np.geomspace(self.start, self.stop, self.num)
        else:
            grid = np.linspace(self.start, self.stop, self.num)
        return [float(f"{v:.12g}") for v in grid]


def _axis_kind(value: Any) -> str:
    return "range" if isinstance(value, dict | SweepRange) else "values"


# a table is a range, anything else a list of values: errors then name the right form
SweepAxis = Annotated[
    Annotated[list[Scalar], Tag("values")] | Annotated[SweepRange, Tag("range")],
    Discriminator(_axis_kind),
]


def axis_values(axis: SweepAxis) -> list[Scalar]:
    """The values of one sweep axis."""
    if isinstance(axis, SweepRange):
        return list(axis.values())
    if not axis:
        raise ValueError("a sweep list needs at least one value")
    return list(axis)


@dataclass(frozen=True)
class SweepPoint:
    """One grid point: its directory name, its assignment and its spec data."""

    index: int
    name: str
    assignment: dict[str, Scalar]
    data: dict[str, Any]


def set_path(data: dict[str, Any], path: str, value: Scalar) -> None:
    """Set ``data[a][b][c] = value`` for the path ``a.b.c``, creating tables as needed."""
    keys = path.split(".")
    if not all(keys):
        raise ValueError(f"bad sweep path {path!r}")
    node = data
    for key in keys[:-1]:
        child = node.setdefault(key, {})
        if not isinstance(child, dict):
            raise ValueError(f"sweep path {path!r}: {key!r} is not a table")
        node = child
    node[keys[-1]] = value


# a point's directory name keeps letters, digits and = . + - _ ; anything else (a path
# separator, markup, control characters) becomes "_", so it never leaves the sweep directory
_UNSAFE = re.compile(r"[^A-Za-z0-9=.+_-]")


def _label(value: Scalar) -> str:
    if isinstance(value, float):
        return f"{value:.4g}" if math.isfinite(value) else str(value)
    return str(value)


MAX_POINTS = 10_000  # grid points of one sweep: a larger grid is refused before anything runs


def grid(base: dict[str, Any], axes: dict[str, SweepAxis]) -> list[SweepPoint]:
    """Every point of the grid, with the sweep table removed from each point's spec.

    Raises:
        ValueError: The product of the axes' sizes is over ``MAX_POINTS`` (checked before
            one point is built).
    """
    paths = list(axes)
    values = [axis_values(axes[p]) for p in paths]
    size = math.prod(len(v) for v in values)
    if size > MAX_POINTS:
        shape = " x ".join(f"{len(v):,}" for v in values)
        raise ValueError(
            f"the sweep grid has {size:,} points ({shape}), over the ceiling of {MAX_POINTS:,}: "
            "split it into several sweeps or use fewer values per axis"
        )
    points = []
    for index, combo in enumerate(itertools.product(*values)):
        data = copy.deepcopy(base)
        data.pop("sweep", None)
        assignment = dict(zip(paths, combo, strict=True))
        for path, value in assignment.items():
            set_path(data, path, value)
        short = "_".join(f"{p.rsplit('.', 1)[-1]}={_label(v)}" for p, v in assignment.items())
        data["name"] = f"{base['name']}-{index:03d}"
        name = _UNSAFE.sub("_", f"{index:03d}_{short}"[:120])
        points.append(SweepPoint(index, name, assignment, data))
    return points
