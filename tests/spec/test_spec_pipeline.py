"""The spec pipeline: schema, one dotted-path editor, and each spec built once per process."""

from __future__ import annotations

from pathlib import Path

import pytest

from opar_sim.running.executors import SerialExecutor
from opar_sim.running.sweep import run_sweep
from opar_sim.spec import build as build_module
from opar_sim.spec.build import load_spec, parse_spec
from opar_sim.spec.edit import apply_changes, changed, sweep_points, with_overrides
from opar_sim.spec.schema import SpecError


def test_changed_sets_and_removes_dotted_paths_on_a_copy():
    data = {"name": "x", "agent": {"params": {"bias": 0.1, "noise": 0.2}}}
    out = changed(data, {"agent.params.bias": 0.3, "agent.params.noise": None, "seed": 4})
    assert out == {"name": "x", "agent": {"params": {"bias": 0.3}}, "seed": 4}
    assert data == {"name": "x", "agent": {"params": {"bias": 0.1, "noise": 0.2}}}


def test_apply_changes_validates_and_names_the_source():
    spec = parse_spec({"name": "x"})
    assert apply_changes(spec, {"controller.params.kp": 2.0}, "test").controller.params == {
        "kp": 2.0
    }
    with pytest.raises(
        SpecError, match=r"^--flag: controller.params.kpp: unknown key \(did you mean 'kp'\?\)$"
    ):
        apply_changes(spec, {"controller.params.kpp": 2.0}, "--flag")
    with pytest.raises(SpecError, match=r"^--flag: .*'name' is not a table"):
        apply_changes(spec, {"name.inner": 1}, "--flag")


def test_with_overrides_keeps_the_spec_when_nothing_changes():
    spec = parse_spec({"name": "x"})
    assert with_overrides(spec) is spec
    assert with_overrides(spec, episodes=7, seed=3).model_dump() == spec.model_dump() | {
        "episodes": 7,
        "seed": 3,
    }
    confirmed = with_overrides(spec, confirm=2)
    assert confirmed.guards.confirm == 2
    assert [name for name, _ in confirmed.guards.enabled()] == ["confirm"]
    assert with_overrides(confirmed, confirm=2) is confirmed


def _sweep_spec(tmp_path: Path) -> str:
    path = tmp_path / "grid.toml"
    path.write_text(
        'name = "grid"\nepisodes = 2\n[controller]\nname = "pid"\n'
        "[sweep]\n"
        '"controller.params.kp" = [0.5, 0.75, 1.0, 1.25, 1.5]\n'
        '"controller.params.kd" = [0.0, 0.1, 0.2, 0.3, 0.4]\n'
    )
    return str(path)


def test_a_25_point_sweep_builds_each_spec_once_per_process(tmp_path, monkeypatch):
    """The parent builds the sweep spec and each of its 25 points exactly once.

    Before the spec pipeline had one owner, the same sweep built every point
    four times in the parent (parse, sweep point, run, chunk) and again in the
    worker whenever its 16-entry cache turned over.  The serial executor runs
    the chunks in this process, so the worker's builds show up here too: none.
    """
    monkeypatch.setattr(build_module, "_CACHE", {})
    monkeypatch.setattr(build_module, "BUILDS", type(build_module.BUILDS)())
    spec = load_spec(_sweep_spec(tmp_path))
    points = sweep_points(spec)
    assert len(points) == 25
    run_sweep(spec, tmp_path / "out", executor=SerialExecutor(), parallelism=1, points=points)
    builds = build_module.BUILDS
    assert builds["grid"] == 1  # the sweep spec itself
    assert sorted(builds) == sorted(["grid", *(p.name for _, p in points)])
    assert set(builds.values()) == {1}  # every point once: parent and worker share the cache
    assert sum(builds.values()) == 26


def test_a_controller_override_runs_only_that_controller_even_when_it_is_the_default():
    spec = parse_spec({"name": "x", "compare": [{"name": "pid"}, {"name": "threshold"}]})
    assert [c.name for c in spec.controller_list()] == ["pid", "threshold"]
    assert [c.name for c in with_overrides(spec, controller="pid").controller_list()] == ["pid"]
