"""sprt: the two sequential statistics, exactly, on hand-made evaluations."""

from __future__ import annotations

import math

import pytest

import controllers
from controllers import ReflectContext, check_controller
from controllers.sprt import ABANDON_LLR, DONE_BINS, N_ACT, abandon_cell, act_bin, done_bin
from opar_sim import ControlSignal, Evaluation

CTX = ReflectContext(step=1, now=0.0, dt=1.0, plan_age=1, plan_exhausted=False, replans=0)


def ev(task=0.5, act=1.0, plan=0.0):
    return Evaluation(task, act, plan, 0.5)


def test_bins_and_cells():
    assert [done_bin(x) for x in (0.0, 0.05, 0.1, 0.55, 0.9, 0.998, 1.0)] == [0, 0, 1, 5, 9, 9, 10]
    assert [act_bin(x) for x in (0.1, 0.35, 0.79, 0.8)] == [0, 1, 1, 2]
    assert abandon_cell(0, 0.1) == 0
    assert abandon_cell(2, 0.6) == 2 * N_ACT + 1
    assert abandon_cell(99, 1.0) == len(ABANDON_LLR) - 1  # capped


def test_statistics_step_by_step():
    done = [-1.0] * (DONE_BINS - 1) + [2.0]  # only a reading of 1.0 is evidence of done
    abandon = [0.0] * len(ABANDON_LLR)
    abandon[abandon_cell(0, 0.6)] = 1.5  # no progress, none before: evidence of infeasible
    abandon[abandon_cell(0, 1.0)] = -1.0
    abandon[abandon_cell(1, 0.6)] = 0.5
    law = controllers.make(
        "sprt", done_llr=done, abandon_llr=abandon, done_boundary=3.5, abandon_boundary=2.9
    )
    d1 = law.decide(ev(task=1.0, act=0.6), CTX)  # C = 2, S = 1.5
    assert d1.signal is ControlSignal.CONTINUE
    assert d1.terms == {"done_llr": 2.0, "abandon_llr": 1.5}
    d2 = law.decide(ev(task=0.4, act=1.0), CTX)  # C = max(0, 2 − 1) = 1; S = 0.5
    assert d2.terms == {"done_llr": 1.0, "abandon_llr": 0.5}
    d3 = law.decide(ev(task=0.2, act=0.6), CTX)  # C = 0; one productive step before: S = 1.0
    assert d3.terms == {"done_llr": 0.0, "abandon_llr": 1.0}
    law.decide(ev(task=0.2, act=0.6), CTX)  # S = 1.5
    law.decide(ev(task=0.2, act=0.6), CTX)  # S = 2.0
    law.decide(ev(task=0.2, act=0.6), CTX)  # S = 2.5
    stop = law.decide(ev(task=0.2, act=0.6), CTX)  # S = 3.0 > 2.9
    assert stop.signal is ControlSignal.TERMINATE and stop.give_up
    law.reset()
    law.decide(ev(task=1.0, act=1.0), CTX)
    done_stop = law.decide(ev(task=1.0, act=1.0), CTX)  # C = 4 > 3.5
    assert done_stop.signal is ControlSignal.TERMINATE and not done_stop.give_up


def test_replans_like_the_threshold_law_between_stops():
    law = controllers.make("sprt")
    assert law.decide(ev(plan=0.7), CTX).signal is ControlSignal.REPLAN
    assert law.decide(ev(act=0.2), CTX).signal is ControlSignal.REPLAN


def test_without_a_calibrated_boundary_it_uses_villes():
    law = controllers.make("sprt", alpha=0.01, beta=0.2, done_boundary=None, abandon_boundary=None)
    assert law.done_at == pytest.approx(math.log(100))
    assert law.abandon_at == pytest.approx(math.log(5))


@pytest.mark.parametrize(
    "params",
    [{"alpha": 0.0}, {"beta": 1.0}, {"done_llr": [0.0] * 3}, {"abandon_llr": [0.0]}],
)
def test_bad_parameters_are_rejected(params):
    with pytest.raises(ValueError):
        controllers.make("sprt", **params)


def test_it_passes_the_controller_checker():
    check_controller(lambda: controllers.make("sprt"), "sprt")


def test_alpha_and_beta_choose_their_calibrated_boundaries_and_change_the_run(tmp_path):
    """Issue 26: with calibrated boundaries the error rates used to do nothing."""
    from controllers.sprt import (
        ABANDON_BOUNDARY,
        DONE_BOUNDARY,
        SPRTReflector,
        calibrated_boundaries,
    )
    from opar_sim.api import run
    from opar_sim.spec.build import load_spec
    from tests.conftest import EXPERIMENTS

    assert calibrated_boundaries(0.05, 0.05) == (DONE_BOUNDARY, ABANDON_BOUNDARY)
    strict = SPRTReflector(alpha=0.01, beta=0.01)
    assert strict.done_at > DONE_BOUNDARY and strict.abandon_at > ABANDON_BOUNDARY
    assert SPRTReflector(alpha=0.07).done_at == DONE_BOUNDARY  # the largest grid rate below
    with pytest.raises(ValueError, match="not calibrated"):
        SPRTReflector(alpha=0.001)
    explicit = SPRTReflector(alpha=0.01, done_boundary=3.0, abandon_boundary=4.0)
    assert (explicit.done_at, explicit.abandon_at) == (3.0, 4.0)  # given boundaries are kept
    steps = {}
    base = load_spec(EXPERIMENTS / "flight_booking.toml").model_dump()
    for alpha in (0.05, 0.01):
        data = base | {"controller": {"name": "sprt", "params": {"alpha": alpha}}, "compare": []}
        done = run(data, episodes=60, seed=5, out=tmp_path / str(alpha), figures=False)
        steps[alpha] = [e["steps"] for e in done.episodes()]
    assert steps[0.05] != steps[0.01]


def _cautions(spec_file: str, **changes: object) -> tuple[str, ...]:
    from opar_sim.spec.build import build, load_spec
    from opar_sim.spec.edit import apply_changes
    from tests.conftest import EXPERIMENTS

    spec = load_spec(EXPERIMENTS / spec_file)
    edits = {"compare": None, "controller": {"name": "sprt", "params": {}}, **changes}
    return build(apply_changes(spec, edits, "cautions")).cautions


def test_it_says_where_it_runs_outside_its_calibration():
    """Issue 26: on research_qa it ran silently with flight_booking's tables."""
    assert _cautions("flight_booking_infeasible.toml") == ()
    assert _cautions("flight_booking.toml") == ()  # the same task and horizon
    other = _cautions("research_qa_faults.toml")
    assert len(other) == 1
    assert other[0].startswith("sprt: not calibrated for this task")
    assert "fitted on flight_booking, not research_qa" in other[0]
    longer = _cautions("flight_booking.toml", **{"limits.max_steps": 40})
    assert longer == (
        "sprt: max_steps 40 is past the horizon its boundaries were calibrated on (20 steps): "
        "the false-completion and false-abandon rates can exceed alpha and beta there",
    )
    # a calibration of the user's own task names that task: no caution
    own = {"calibrated_task": "research_qa", "calibrated_horizon": 40}
    assert _cautions("research_qa_faults.toml", **{"controller.params": own}) == ()


def test_a_run_outside_the_calibration_prints_the_caution(tmp_path, capsys):
    from opar_sim.cli import main
    from tests.conftest import EXPERIMENTS

    spec = str(EXPERIMENTS / "research_qa_faults.toml")
    argv = ["run", spec, "--controller", "sprt", "--episodes", "3", "--out", str(tmp_path / "r")]
    assert main(argv) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "caution: sprt: not calibrated for this task" in out
