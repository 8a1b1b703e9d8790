"""Every registered controller conforms; the checker names each breach; plugins are found."""

from __future__ import annotations

import inspect
import math
from importlib.metadata import EntryPoint

import pytest

import controllers
from controllers import ControllerCheckError, check_controller
from controllers import registry as registry_module
from opar_sim import ControlSignal, Decision

ALL = ("pid", "threshold", "confidence", "open_loop", "fixed_interval", "stall_counter", "oracle")


def test_every_rival_is_registered():
    assert set(ALL) <= set(controllers.names())


@pytest.mark.parametrize("name", controllers.names())
def test_registered_controller_conforms(name):
    check_controller(lambda: controllers.make(name), name)


class Forgetful:
    """Counts Reflects and never forgets: reset() is broken."""

    name = "forgetful"

    def __init__(self) -> None:
        self.count = 0

    def reset(self) -> None:
        pass

    def decide(self, evaluation, ctx):
        self.count += 1
        signal = ControlSignal.TERMINATE if self.count % 7 == 0 else ControlSignal.CONTINUE
        return Decision(signal, "counting", {"count": float(self.count)})


class Mute:
    name = "mute"

    def reset(self) -> None:
        pass

    def decide(self, evaluation, ctx):
        return Decision(ControlSignal.CONTINUE, "", {})


class NaNTerms(Mute):
    name = "nan_terms"

    def decide(self, evaluation, ctx):
        return Decision(ControlSignal.CONTINUE, "why not", {"gain": math.nan})


class NotASignal(Mute):
    name = "not_a_signal"

    def decide(self, evaluation, ctx):
        return Decision("continue", "a string is not a signal", {})  # type: ignore[arg-type]


_shared = {"calls": 0}


class SharesState(Mute):
    """Keeps its state on the class, so two instances disagree."""

    name = "shares_state"

    def reset(self) -> None:
        _shared["calls"] = _shared["calls"] % 1000

    def decide(self, evaluation, ctx):
        _shared["calls"] += 1
        return Decision(ControlSignal.CONTINUE, "shared", {"calls": float(_shared["calls"])})


@pytest.mark.parametrize(
    ("factory", "message"),
    [
        (Forgetful, "reset\\(\\) does not restore"),
        (Mute, "needs a reason"),
        (NaNTerms, "not finite"),
        (NotASignal, "not a ControlSignal"),
        (SharesState, "reset\\(\\) does not restore|same inputs, different decisions"),
    ],
)
def test_the_checker_names_each_breach(factory, message):
    with pytest.raises(ControllerCheckError, match=message):
        check_controller(factory)


def test_the_checker_rejects_a_name_that_differs_from_the_registration():
    with pytest.raises(ControllerCheckError, match="registered as 'pid2' but named 'pid'"):
        check_controller(lambda: controllers.make("pid"), "pid2")


def test_a_plugin_declared_as_an_entry_point_is_found(monkeypatch):
    plugin = EntryPoint(
        name="my_open_loop",
        value="controllers.open_loop:OpenLoop",
        group=registry_module.ENTRY_POINT_GROUP,
    )
    seen_groups = []

    def fake_entry_points(*, group):
        seen_groups.append(group)
        return [plugin]

    monkeypatch.setattr(registry_module, "entry_points", fake_entry_points)
    monkeypatch.setattr(registry_module, "_REGISTRY", dict(registry_module._REGISTRY))
    monkeypatch.setattr(registry_module, "_loaded_plugins", False)
    assert "my_open_loop" in controllers.names()
    assert seen_groups == ["opar_sim.controllers"]
    made = controllers.make("my_open_loop")
    assert type(made).__name__ == "OpenLoop"
    assert controllers.describe("my_open_loop").startswith("Follow the first plan")


@pytest.mark.parametrize("name", controllers.names())
def test_every_parameter_of_a_controller_is_documented(name):
    factory = registry_module._REGISTRY[name]
    docs = " ".join(
        (inspect.getdoc(inspect.getmodule(cls)) or "") + (inspect.getdoc(cls) or "")
        for cls in inspect.getmro(factory)
        if cls is not object
    )
    for parameter in inspect.signature(factory).parameters:
        assert parameter in docs, f"{name}: parameter {parameter!r} is not documented"
