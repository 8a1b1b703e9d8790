"""The generic Registry: register/make/names/describe, its error messages and its plugins."""

from __future__ import annotations

from importlib.metadata import EntryPoint

import pytest
from pydantic import BaseModel, ConfigDict, Field

from opar_sim.agents.registry import AGENTS
from opar_sim.core.guards import GUARDS
from opar_sim.core.registry import ParameterError, Registry, UnknownNameError
from opar_sim.llm.config import BACKENDS, BackendSpec
from opar_sim.registry import KINDS, catalogue
from opar_sim.spec.guards import DetectorsSpec, GuardsSpec, HumanGateSpec


class Box:
    """A box of a given size.

    More text that describe() leaves out.
    """

    def __init__(self, size: int = 1) -> None:
        if size < 0:
            raise ValueError("size must be >= 0")
        self.size = size


class Plain:
    def __init__(self) -> None:
        self.size = 0


class _Params(BaseModel):
    model_config = ConfigDict(extra="forbid")

    width: int = Field(1, ge=1)


class Validated:
    """Parameters checked by pydantic."""

    def __init__(self, **params: object) -> None:
        self.params = _Params.model_validate(params)


def _registry() -> Registry[object]:
    registry: Registry[object] = Registry("thing")
    registry.register("box", Box)
    registry.register("plain", Plain)
    registry.register("validated", Validated)
    return registry


def test_register_make_names_describe() -> None:
    registry = _registry()
    made = registry.make("box", size=3)
    assert isinstance(made, Box) and made.size == 3
    assert registry.names() == ["box", "plain", "validated"]
    assert registry.describe("box") == "A box of a given size."
    assert registry.describe("plain") == ""
    assert "box" in registry and "crate" not in registry


def test_re_registering_replaces() -> None:
    registry = _registry()
    registry.register("box", Plain)
    assert isinstance(registry.make("box"), Plain)


def test_an_unknown_name_lists_the_known_ones() -> None:
    registry = _registry()
    message = "unknown thing 'crate' (known: box, plain, validated)"
    with pytest.raises(ValueError) as info:
        registry.make("crate")
    assert str(info.value) == message
    with pytest.raises(KeyError) as key_info:  # describe() raised KeyError before
        registry.describe("crate")
    assert str(key_info.value) == message
    assert isinstance(key_info.value, UnknownNameError)


def test_a_keyword_the_signature_refuses_is_named() -> None:
    with pytest.raises(ValueError) as info:
        _registry().make("box", colour="red")
    assert str(info.value) == "thing 'box' parameter colour: unknown key"


def test_a_value_error_from_the_factory_is_named() -> None:
    with pytest.raises(ValueError) as info:
        _registry().make("box", size=-1)
    assert str(info.value) == "thing 'box': size must be >= 0"


def test_a_validation_error_names_the_parameter() -> None:
    registry = _registry()
    with pytest.raises(ParameterError) as info:
        registry.make("validated", width=0)
    assert str(info.value) == ("thing 'validated' parameter width: must be at least 1, got 0")
    assert (info.value.loc, info.value.error_type) == ("width", "greater_than_equal")
    with pytest.raises(ValueError) as extra:
        registry.make("validated", height=2)
    assert str(extra.value) == "thing 'validated' parameter height: unknown key"
    assert isinstance(extra.value, ParameterError) and extra.value.error_type == "extra_forbidden"


def test_entry_points_are_loaded_once_and_lazily() -> None:
    groups: list[str] = []
    plugins = [
        EntryPoint(name="open", value="controllers.open_loop:OpenLoop", group="my.group"),
        EntryPoint(name="box", value="controllers.oracle:Oracle", group="my.group"),
    ]

    def fake_entry_points(*, group: str) -> list[EntryPoint]:
        groups.append(group)
        return plugins

    registry: Registry[object] = Registry(
        "thing", entry_point_group="my.group", entry_points=fake_entry_points
    )
    registry.register("box", Box)
    assert groups == []  # nothing is read before the first lookup
    assert registry.names() == ["box", "open"]
    assert type(registry.make("open")).__name__ == "OpenLoop"
    assert isinstance(registry.make("box"), Box)  # a registered name wins over a plugin
    assert registry.describe("open").startswith("Follow the first plan")
    assert "open" in registry
    assert groups == ["my.group"]


def test_without_a_group_no_entry_points_are_read() -> None:
    def fail(*, group: str) -> list[EntryPoint]:
        raise AssertionError(group)

    registry: Registry[object] = Registry("thing", entry_points=fail)
    registry.register("box", Box)
    assert registry.names() == ["box"]


def test_the_catalogue_lists_every_kind() -> None:
    import controllers
    import environments
    from environments.wrappers import wrapper_names

    found = catalogue()
    assert tuple(found) == KINDS
    assert [n for n, _ in found["controllers"]] == controllers.names()
    assert [n for n, _ in found["tasks"]] == environments.names()
    assert [n for n, _ in found["wrappers"]] == wrapper_names()
    assert [n for n, _ in found["agents"]] == ["llm", "simulated"]
    assert [n for n, _ in found["backends"]] == ["llamacpp", "ollama"]
    guards = [n for n, _ in found["guards"]]
    # each [guards] key is a guard, and so is each key of its [guards.detectors] table
    keys = GuardsSpec.model_fields.keys() - {"repeat_persist", "detectors"}
    assert guards == sorted(keys | DetectorsSpec.model_fields.keys())
    assert [n for n, _ in found["studies"]] == ["learning", "rebound"]
    for kind in KINDS:
        assert all(description for _, description in found[kind]), kind


def test_every_guards_key_builds_its_registered_guard() -> None:
    spec = GuardsSpec(
        confirm=2,
        max_iterations=5,
        time_budget=60.0,
        token_budget=1000,
        token_spike=3.0,
        no_improvement=2,
        repeat=True,
        confidence=0.9,
        human=HumanGateSpec(latency=1.0),
        detectors=DetectorsSpec(
            same_call=3, pattern=4, stall=3, near_identical=3, cusum=0.3, integral=20.0
        ),
    )
    made = spec.guards()
    assert [g.name for g in made] == [name for name, _ in spec.enabled()]
    assert sorted(g.name for g in made) == GUARDS.names()
    assert GuardsSpec().guards() == [] and GuardsSpec().supervisor() is None


def test_agent_kinds_name_the_bad_parameter() -> None:
    with pytest.raises(ParameterError) as info:
        AGENTS.make("simulated", params={"bias": 5.0})
    assert info.value.loc == "bias"
    assert callable(AGENTS.make("simulated", params={}))
    with pytest.raises(ValueError, match=r"^unknown agent 'robot' \(known: llm, simulated\)$"):
        AGENTS.make("robot", params={})


def test_backends_are_made_by_name_without_contacting_anything() -> None:
    backend = BACKENDS.make("ollama", spec=BackendSpec(backend="ollama", model="m"))
    assert (backend.name, backend.model) == ("ollama", "m")
