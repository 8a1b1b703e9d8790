"""The batch engine's step rows: recorded without changing a result, exactly what the law read.

The engine hands each step's state to ``StepRecorder`` (``_Engine(record=...)``); the
recorded rows are checked against the episodes they belong to, and replayed through the
scalar laws (``opar-sim replay``): a law replayed on its own batch run makes the recorded
decision at every step of every episode, so each row holds what the batch law read.
"""

from __future__ import annotations

import numpy as np
import pytest

from opar_sim.cli import main
from opar_sim.engines.batch import run_batch, step_recorder
from opar_sim.engines.batch.phases import TERMINATED
from opar_sim.rundir import read_jsonl
from opar_sim.running.runner import run_experiment
from opar_sim.spec.build import load_spec
from opar_sim.spec.schema import ControllerSpec
from tests.conftest import SPEC

EPISODES = 400


@pytest.fixture(scope="module")
def spec():
    compare = [ControllerSpec(name="pid"), ControllerSpec(name="threshold")]
    return load_spec(SPEC).model_copy(update={"episodes": EPISODES, "seed": 5, "compare": compare})


def test_recording_the_steps_changes_no_result(spec):
    plain = run_batch(spec, 0, 0, EPISODES)
    recorder = step_recorder(spec)
    recorded = run_batch(spec, 0, 0, EPISODES, recorder)
    for name in plain.__dataclass_fields__:
        if name not in ("answer_fields", "words"):
            assert np.array_equal(getattr(plain, name), getattr(recorded, name)), name
    assert plain.answers() == recorded.answers()


def test_each_episode_holds_its_steps_and_its_last_decision(spec):
    recorder = step_recorder(spec)
    result = run_batch(spec, 0, 0, EPISODES, recorder)
    table = recorder.step_table(spec, 0)
    episode = table.column("episode").to_numpy()
    step = table.column("step").to_numpy()
    assert np.array_equal(np.bincount(episode, minlength=EPISODES), result.steps)
    starts = np.concatenate(([0], np.cumsum(result.steps)[:-1]))
    has = result.steps > 0
    assert np.array_equal(step[starts[has]], np.ones(has.sum()))  # each starts at step 1
    last = (starts + result.steps - 1)[has]
    signals = np.array(table.column("signal").to_pylist(), object)
    stopped = result.status[has] == TERMINATED
    assert np.all(signals[last][stopped] == "terminate")
    assert not np.any(signals[last][~stopped] == "terminate")
    tokens = table.column("tokens").to_numpy()
    time = table.column("time").to_numpy()
    inner = np.ones(len(step), bool)
    inner[starts[has]] = False  # each episode's first row has no previous one
    assert np.all(np.diff(tokens)[inner[1:]] > 0) and np.all(np.diff(time)[inner[1:]] > 0)
    assert table.column("controller").to_pylist()[0] == "pid"


def test_a_law_replayed_on_its_batch_run_agrees_at_every_step(spec, tmp_path, capsys):
    out = tmp_path / "run"
    run_experiment(spec, out, engine="batch")
    for law in ("pid", "threshold"):
        assert main(["replay", str(out), "--controller", law]) == 0
        every = list(read_jsonl(out / f"replay_{law}.jsonl"))
        verdicts = [v for v in every if v["recorded_controller"] == law]
        assert len(verdicts) == EPISODES
        others = [v for v in every if v["recorded_controller"] != law]
        assert {v["verdict"] for v in others} != {"same"}  # the other law's runs diverge
        assert {v["verdict"] for v in verdicts} == {"same"}
        assert all(v["outcome"] == v["recorded_outcome"] for v in verdicts)
    capsys.readouterr()
