"""The fitting protocol of bayes's chain: its labels, and that labelling changes no decision."""

from __future__ import annotations

from controllers.bayes import BayesReflector, model_from
from controllers.bayes.fit import state_of
from opar_sim.calibration.bayes_fit import labelled_steps
from opar_sim.running.runner import simulate
from opar_sim.spec.build import build, load_spec
from opar_sim.spec.edit import apply_changes


def test_labelled_steps_are_the_laws_own_episodes_with_their_labels() -> None:
    spec = load_spec("experiments/flight_booking.toml")
    spec = apply_changes(spec, {"controller": {"name": "bayes", "params": {}}}, "test")
    law = build(spec).controllers[0][1]()
    assert isinstance(law, BayesReflector)
    model = model_from(law._info, law.overrides)
    steps, rate = labelled_steps(spec, model, 20, 100)
    results = list(simulate(spec, episodes=20, seed=100))
    assert rate == sum(r.success for r in results) / 20  # the labeller decides as bayes does
    assert len(steps) == sum(len(r.steps) for r in results)
    # each step's state before is the previous step's state after (-1 on an episode's first)
    starts = {0}
    total = 0
    for r in results:
        total += len(r.steps)
        starts.add(total)
    for i, s in enumerate(steps):
        assert s.before == (-1 if i in starts else steps[i - 1].after)
        assert s.after == -1 or s.after == state_of(s.visible)
        assert 0.0 <= s.true_quality <= 1.0
