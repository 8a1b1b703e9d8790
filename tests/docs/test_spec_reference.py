"""docs/spec-reference.md is the generator's current output, and it names every spec key."""

from __future__ import annotations

from opar_sim.agents.simulated import SimulatedAgentParams
from opar_sim.spec.reference import COMMAND, main, render
from opar_sim.spec.schema import ExperimentSpec, LimitsSpec, TuneSpec
from tests.conftest import ROOT

REFERENCE = ROOT / "docs" / "spec-reference.md"


def test_the_reference_is_current():
    assert REFERENCE.read_text(encoding="utf-8") == render(), f"stale: run {COMMAND}"
    assert main(["--check", str(REFERENCE)]) == 0


def test_check_fails_on_a_stale_file(tmp_path, capsys):
    stale = tmp_path / "ref.md"
    stale.write_text(render().replace("max_steps", "max_stepz"), encoding="utf-8")
    assert main(["--check", str(stale)]) == 1
    assert COMMAND in capsys.readouterr().err


def test_every_key_of_every_model_is_documented():
    text = render()
    for model in (ExperimentSpec, LimitsSpec, TuneSpec, SimulatedAgentParams):
        for key in model.model_fields:
            assert f"| `{key}` |" in text, key
    for table in ("[task]", "[limits]", "[[compare]]", "[guards.human]", "[tune.space.NAME]"):
        assert f"### `{table}`" in text, table
    assert "| `kd` | float | 1.6 |" in text  # a controller's parameter, from its signature
    assert "| `max_price` | float | 600.0 |" in text  # a task's, from its Params model
