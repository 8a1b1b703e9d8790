"""The table: the model simulated on a grid of shifts (and latent lengths), per feature value.

The table depends on the model, not on the fitted task effect, so every
likelihood and prediction of the heterogeneous model reads it without further
simulation (the package docstring).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from opar_sim.calibration.heterogeneity.record import Key, Record
from opar_sim.core.loop import run_episode
from opar_sim.core.seeding import episode_seed
from opar_sim.spec.build import build
from opar_sim.spec.edit import apply_changes
from opar_sim.spec.schema import ExperimentSpec, SpecError

U_GRID = tuple(float(u) for u in np.arange(-5.0, 7.01, 1.0))  # logit shifts of the table
TABLE_TRIALS = 4  # a table cell runs its episodes as worlds of this many trials each
LENGTH_GRID = (0, 1, 2, 3, 4, 5, 6, 8, 10, 12, 14)  # latent extra lookups r of the table


@dataclass
class Table:
    """Simulated outcomes and tool calls per (feature value, latent length, grid shift) cell.

    The rows of a feature's arrays are the (length, shift) pairs, length-major: row
    ``l * len(u) + g`` is length ``lengths[l]`` at shift ``u[g]``.  A table without
    the latent length has the one length 0 (its rows are the shifts).
    """

    u: np.ndarray
    success: dict[Key, np.ndarray]  # cell -> (rows, episodes) bool
    calls: dict[Key, np.ndarray]  # cell -> (rows, episodes) int
    top: int  # the largest tool-call count the distributions cover
    lengths: np.ndarray = field(default_factory=lambda: np.zeros(1))  # latent extra lookups

    @property
    def has_lengths(self) -> bool:
        """Whether the table has the latent length (more than one r)."""
        return len(self.lengths) > 1

    @property
    def rows(self) -> int:
        """The (length, shift) rows of every cell."""
        return len(self.lengths) * len(self.u)

    def rate(self, x: Key) -> np.ndarray:
        """P(success) per grid point for feature ``x``, kept off 0 and 1 by half a run."""
        s = self.success[x]
        e = s.shape[1]
        rate: np.ndarray = np.clip(s.mean(axis=1), 0.5 / e, 1 - 0.5 / e)
        return rate


def feature_changes(spec: ExperimentSpec, feature: str, x: float) -> dict[str, Any]:
    """The spec changes that make every world of the model's task have ``feature`` = ``x``.

    Args:
        spec: The model spec.
        feature: The feature's name.
        x: Its value.

    Returns:
        Dotted-path changes (``tool_chain``'s ``write_weights`` one-hot at ``x``).

    Raises:
        SpecError: when the model's task cannot be forced to that feature value.
    """
    if spec.task.name == "tool_chain" and feature == "write_actions":
        n = int(x)
        if n != x or n < 0 or n > 50:
            raise SpecError(f"write_actions {x} is not a count the model's task can make")
        weights = [0.0] * (n + 1)
        weights[n] = 1.0
        return {"task.params.write_weights": weights}
    raise SpecError(
        f"the model's task {spec.task.name!r} cannot be set to {feature} = {x:g}; "
        "use a model whose task has that feature (e.g. tool_chain for write_actions)"
    )


def shape_changes(spec: ExperimentSpec, shape: str, length: float) -> dict[str, Any]:
    """The spec changes that stretch the model's task to a recorded task's ``shape`` value.

    Args:
        spec: The model spec.
        shape: The feature matched (``actions``: the ground-truth action count).
        length: Its value for the task.

    Returns:
        Dotted-path changes (``tool_chain``'s ``actions``).

    Raises:
        SpecError: when the model's task has no such length.
    """
    if spec.task.name == "tool_chain" and shape == "actions":
        return {"task.params.actions": int(length)}
    raise SpecError(
        f"the model's task {spec.task.name!r} cannot be stretched to {shape} = {length:g}; "
        "use tool_chain with --shape actions"
    )


def length_changes(spec: ExperimentSpec, extra: int) -> dict[str, Any]:
    """The spec changes that give every world of the model's task ``extra`` latent lookups.

    Args:
        spec: The model spec.
        extra: The latent extra lookups r.

    Returns:
        Dotted-path changes (``tool_chain``'s ``extra_reads``).

    Raises:
        SpecError: when the model's task has no latent length.
    """
    if spec.task.name == "tool_chain":
        return {"task.params.extra_reads": int(extra)}
    raise SpecError(
        f"the model's task {spec.task.name!r} has no latent length; use tool_chain "
        "(extra_reads) or leave the task length out"
    )


def build_table(
    spec: ExperimentSpec,
    features: Sequence[Key],
    feature: str,
    episodes: int = 48,
    seed: int = 0,
    advance: Callable[[int], None] | None = None,
    shape: str | None = None,
    lengths: Sequence[int] | None = None,
) -> Table:
    """Run the model on every (feature value, latent length, grid shift) cell.

    Every cell runs ``episodes`` episodes as worlds of ``TABLE_TRIALS`` trials
    each (the trials of a world share it, as a recorded task's runs do), with the
    agent's shift fixed at the grid point.  Every cell has worlds of its own
    (seeds ``seed`` with episode numbers not shared with another cell): a
    simulated record drawn from the table must not meet the same world in two
    cells.

    Args:
        spec: The model spec (simulated agent; its task, controller and limits).
        features: The cells of the record (``TaskRuns.key``): feature values (a single 0
            when it has none), or (feature, length) pairs with ``shape``.
        feature: The feature's name.
        episodes: Episodes per cell.
        seed: The run seed of the cells' episodes.
        advance: Called with the episodes done after each cell (a progress bar).
        shape: The feature the pairs' lengths are of (``shape_changes``), or None.
        lengths: The latent extra lookups r of the table (``length_changes``; e.g.
            ``LENGTH_GRID``), or None: no latent length (the model's worlds as they are).

    Returns:
        The table.
    """
    if spec.agent.kind != "simulated":
        raise SpecError(f"the model must have a simulated agent, not {spec.agent.kind!r}")
    success: dict[Key, np.ndarray] = {}
    calls: dict[Key, np.ndarray] = {}
    varying = len(set(features)) > 1 or shape is not None
    worlds = -(-episodes // TABLE_TRIALS)
    cell = 0
    for x in features:
        base = spec
        if isinstance(x, tuple):
            if shape is None:
                raise SpecError("a table of (feature, length) cells needs the shape's name")
            changes = feature_changes(spec, feature, x[0]) | shape_changes(spec, shape, x[1])
            base = apply_changes(spec, changes, "table")
        elif varying:
            base = apply_changes(spec, feature_changes(spec, feature, x), "table")
        extras: list[int | None] = [None] if lengths is None else [int(r) for r in lengths]
        s = np.zeros((len(extras) * len(U_GRID), episodes), dtype=bool)
        c = np.zeros((len(extras) * len(U_GRID), episodes), dtype=np.int64)
        for row, (r, u) in enumerate((r, u) for r in extras for u in U_GRID):
            changes = {
                "agent.params.task_effect_mean": u,
                "agent.params.task_effect_slope": 0.0,
                "agent.params.task_effect_sd": 0.0,
            }
            if r is not None:
                changes |= length_changes(spec, r) | {"task.params.extra_reads_mean": 0.0}
            parts = build(apply_changes(base, changes, "table"))
            make_controller = parts.controllers[0][1]
            task, agent = parts.make_task(), parts.make_agent()
            for i in range(episodes):
                world, trial = divmod(i, TABLE_TRIALS)
                result = run_episode(
                    task,
                    agent,
                    make_controller(),
                    parts.limits,
                    episode_seed(seed, cell * worlds + world),
                    trial=trial + 1,
                )
                s[row, i] = result.success
                c[row, i] = result.cost.tool_calls
            cell += 1
            if advance is not None:
                advance(episodes)
        success[x], calls[x] = s, c
    top = int(max(int(c.max()) for c in calls.values()))
    grid = np.zeros(1) if lengths is None else np.array([float(r) for r in lengths])
    return Table(np.array(U_GRID), success, calls, top, grid)


def table_cells(
    record: Record, episodes: int, lengths: Sequence[int] | None = None
) -> tuple[list[Key], int]:
    """The cells (``TaskRuns.key``) the table needs and the episodes it will run."""
    features: list[Key] = sorted({t.key for t in record.tasks})
    per_feature = len(U_GRID) * (1 if lengths is None else len(lengths))
    return features, len(features) * per_feature * episodes
