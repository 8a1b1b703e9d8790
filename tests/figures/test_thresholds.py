"""The figures read a law's thresholds from the spec and never construct a controller."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import controllers
from opar_sim.core.controller import TruthReader
from opar_sim.figures import reads_truth, thresholds
from opar_sim.measure.run import RunAnalysis
from opar_sim.spec.build import load_spec
from opar_sim.spec.laws import law_settings
from tests.conftest import EXPERIMENTS

FIGURES = Path(__file__).resolve().parents[2] / "opar_sim" / "figures"


def _analysis(params: dict[str, object] | None = None) -> RunAnalysis:
    spec = load_spec(EXPERIMENTS / "flight_booking.toml")
    if params is not None:
        law = spec.controller.model_copy(update={"params": params})
        spec = spec.model_copy(update={"controller": law})
    return RunAnalysis(Path("."), spec, {}, None)


def test_no_figure_module_imports_the_controllers():
    found = []
    for path in sorted(FIGURES.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            found += [f"{path.name}: {n}" for n in names if n.split(".")[0] == "controllers"]
    assert found == []


@pytest.mark.parametrize(
    "params",
    [{}, {"replan_threshold": 1.5, "settle_band": 0.2, "kp": 1.0}, {"replan_threshold": 2}],
)
def test_the_thresholds_are_the_built_laws(params):
    law = controllers.make("pid", **params)
    expected = (float(law.replan_threshold), float(law.settle_band))
    assert thresholds(_analysis(params), "pid") == expected


def test_a_law_without_thresholds_or_unknown_or_misconfigured_has_none():
    assert thresholds(_analysis(), "threshold") == (None, None)
    assert thresholds(_analysis(), "no_such_law") == (None, None)
    assert thresholds(_analysis({"bogus": 1}), "pid") == (None, None)
    assert law_settings(None, "pid") is not None  # no spec: the declared defaults


def test_only_the_laws_that_read_the_hidden_state_are_set_apart():
    analysis = _analysis()
    for name in controllers.names():
        assert reads_truth(analysis, name) == isinstance(controllers.make(name), TruthReader)
    assert reads_truth(analysis, "oracle")
    assert not reads_truth(analysis, "laws.py:Mine")  # a file's law: by its name only
