"""The one way to change a spec: dotted-path edits, validated once.

Command-line overrides, sweep points, tuning trials, compare's controller
lists, the studies' arms and calibration all change a spec through
``set_path`` and ``apply_changes``.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from opar_sim.spec.build import parse_spec
from opar_sim.spec.grid import SweepPoint, grid, set_path
from opar_sim.spec.schema import ExperimentSpec, SpecError


def changed(data: Mapping[str, Any], changes: Mapping[str, Any]) -> dict[str, Any]:
    """A deep copy of spec data with each ``dotted.path: value`` set (None removes the key).

    Args:
        data: Spec data, e.g. ``spec.model_dump()``.
        changes: Dotted paths and their new values.

    Returns:
        The changed copy; ``data`` is untouched.
    """
    out = copy.deepcopy(dict(data))
    for path, value in changes.items():
        if value is None:
            *parents, leaf = path.split(".")
            node: Any = out
            for key in parents:
                node = node.get(key, {})
            if isinstance(node, dict):
                node.pop(leaf, None)
        else:
            set_path(out, path, value)
    return out


def apply_changes(
    spec: ExperimentSpec | Mapping[str, Any], changes: Mapping[str, Any], source: str
) -> ExperimentSpec:
    """The spec with ``changes`` applied, validated and built.

    Args:
        spec: A spec, or spec data.
        changes: Dotted paths and their new values (None removes the key).
        source: Where the changes came from, for the error message.

    Returns:
        The changed spec.
    """
    data = spec.model_dump() if isinstance(spec, ExperimentSpec) else spec
    try:
        new = changed(data, changes)
    except ValueError as exc:
        raise SpecError(f"{source}: {exc}") from None
    return parse_spec(new, source)


def sweep_points(
    spec: ExperimentSpec, source: str = "spec"
) -> list[tuple[SweepPoint, ExperimentSpec]]:
    """The sweep grid of ``spec``, each point validated; errors name the sweep path.

    Args:
        spec: A spec with a ``[sweep]`` table.
        source: Where it came from, for the error message.

    Returns:
        Every grid point with its validated spec.

    Raises:
        SpecError: when there is no sweep, or a point is not a valid spec.
    """
    if not spec.sweep:
        raise SpecError(f"{source}: no [sweep] table: nothing to sweep")
    try:
        points = grid(spec.model_dump(), spec.sweep)
    except ValueError as exc:
        raise SpecError(f"{source}: sweep: {exc}") from None
    out = []
    for point in points:
        where = ", ".join(f"{k} = {v!r}" for k, v in point.assignment.items())
        try:
            out.append((point, parse_spec(point.data, f"sweep point {where}")))
        except SpecError as exc:
            raise SpecError(f"{source}: {exc}") from None
    return out


def with_overrides(
    spec: ExperimentSpec,
    *,
    episodes: int | None = None,
    seed: int | None = None,
    controller: str | None = None,
    agent: str | None = None,
    confirm: int | None = None,
    trials: int | None = None,
) -> ExperimentSpec:
    """Apply command-line overrides; a new controller or agent kind keeps no old parameters.

    Args:
        spec: The spec read from its file.
        episodes: The number of episodes, if given.
        seed: The seed, if given.
        controller: A controller name; it replaces the spec's controllers (and
            empties ``compare``).
        agent: An agent kind (``simulated`` or ``llm``).
        confirm: The shared stop confirmation ``guards.confirm`` (k consecutive
            completion claims), if given.
        trials: Runs of every episode's world (``trials``, for pass^k), if given.

    Returns:
        The changed spec, validated and built; ``spec`` itself when nothing changes.
    """
    changes: dict[str, Any] = {}
    if agent is not None and agent != spec.agent.kind:
        changes |= {"agent.kind": agent, "agent.params": {}}
    if episodes is not None:
        changes["episodes"] = episodes
    if seed is not None:
        changes["seed"] = seed
    # a spec comparing several laws runs only the named one: the override is never skipped
    if controller is not None and (controller != spec.controller.name or spec.compare):
        changes |= {"controller": {"name": controller, "params": {}}, "compare": []}
    if confirm is not None and confirm != spec.guards.confirm:
        changes["guards.confirm"] = confirm
    if trials is not None and trials != spec.trials:
        changes["trials"] = trials
    if not changes:
        return spec
    return apply_changes(spec, changes, "command line")


def with_controllers(spec: ExperimentSpec, names: list[str]) -> ExperimentSpec:
    """``spec`` comparing ``names``; a controller the spec configures keeps its parameters.

    Args:
        spec: The spec.
        names: Registered controller names (or ``file.py:ClassName`` references).

    Returns:
        The spec with ``compare`` set to ``names``, validated and built.
    """
    configured = {c.name: c.params for c in [spec.controller, *spec.compare]}
    compare = [{"name": n, "params": configured.get(n, {})} for n in names]
    return apply_changes(spec, {"compare": compare}, "--controllers")
