"""The claims of experiments/compare_flight_booking.toml hold in the numbers."""

from __future__ import annotations

import pytest

from opar_sim.measure.run import RunAnalysis, analyze
from opar_sim.running.runner import run_experiment
from opar_sim.spec.build import load_spec, parse_spec
from opar_sim.spec.edit import with_overrides
from tests.conftest import EXPERIMENTS

SPEC = EXPERIMENTS / "compare_flight_booking.toml"
EPISODES = 120


@pytest.fixture(scope="module")
def compared(tmp_path_factory: pytest.TempPathFactory) -> RunAnalysis:
    spec = with_overrides(load_spec(SPEC), episodes=EPISODES)
    out = tmp_path_factory.mktemp("claims") / "run"
    run_experiment(spec, out)
    return analyze(out, keep=0)


def test_fixed_interval_with_a_small_interval_chatters(compared):
    fixed = compared.controllers["fixed_interval"]
    others = [m for name, m in compared.controllers.items() if name != "fixed_interval"]
    assert fixed.replans.mean > 1.5 * max(m.replans.mean for m in others)
    assert fixed.replan_rate > 0.8  # REPLAN decided at more than 4 steps in 5
    assert fixed.thrash_share > 0.8


def test_an_over_confident_agent_stops_early_under_confidence(compared, tmp_path):
    confidence = compared.controllers["confidence"]
    for name in ("pid", "threshold", "stall_counter", "fixed_interval", "oracle"):
        assert confidence.premature_share > compared.controllers[name].premature_share, name
    assert confidence.mean_gap > 0.15  # the agent believes it is further along than it is
    # the same law with the default, barely biased agent stops early far less often
    data = load_spec(SPEC).model_dump()
    data |= {"episodes": EPISODES, "compare": [{"name": "confidence", "params": {}}]}
    data["agent"]["params"]["bias"] = 0.05
    run_experiment(parse_spec(data), tmp_path / "calibrated")
    calibrated = analyze(tmp_path / "calibrated", keep=0).controllers["confidence"]
    assert confidence.premature_share > calibrated.premature_share + 0.25


def test_the_oracle_bounds_every_law_and_regret_is_measured_against_it(compared):
    oracle = compared.controllers["oracle"]
    assert oracle.regret is None and oracle.premature_share == 0.0
    for name, m in compared.controllers.items():
        if name != "oracle":
            assert m.regret is not None and m.regret.low > 0, name
