"""The trajectories a run keeps as it runs are the ones its steps.jsonl reads back."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from opar_sim.figures.run import traces_from_files
from opar_sim.rundir import EpisodeTrace
from opar_sim.running.executors import ExecutorConfig, open_executor
from opar_sim.running.runner import run_experiment
from opar_sim.spec.build import load_spec
from tests.conftest import EXPERIMENTS


def _same(a: EpisodeTrace, b: EpisodeTrace) -> None:
    assert (a.controller, a.episode, a.agent, a.attempt, a.trial) == (
        b.controller,
        b.episode,
        b.agent,
        b.attempt,
        b.trial,
    )
    assert a.step.tolist() == b.step.tolist() and a.step.dtype == b.step.dtype
    assert a.time.tolist() == b.time.tolist()
    assert a.progress.tolist() == b.progress.tolist()
    assert np.array_equal(a.estimate, b.estimate, equal_nan=True)
    assert a.signals == a.actions == []  # the figure's traces carry no labels


def _check(name: str, episodes: int, keep: int, out: Path, **kw: object) -> None:
    spec = load_spec(EXPERIMENTS / f"{name}.toml").model_copy(update={"episodes": episodes})
    result = run_experiment(spec, out, keep_traces=keep, **kw)  # type: ignore[arg-type]
    assert result.traces is not None
    from opar_sim.figures import run as run_figures

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(run_figures, "FIGURE_EPISODES", keep)
        read = traces_from_files(spec, out)
    assert list(result.traces) == list(read)
    for controller, traces in read.items():
        kept = result.traces[controller]
        assert len(kept) == len(traces) == min(keep, len(traces))
        for a, b in zip(kept, traces, strict=True):
            _same(a, b)


@pytest.mark.parametrize(
    ("name", "episodes", "keep"),
    [
        ("compare_flight_booking", 12, 2000),  # two controllers, all kept
        ("compare_flight_booking", 12, 5),  # a "large" run: the first 5 of each
        ("flight_booking_trials", 4, 2000),  # trials > 1
        ("reflexion", 5, 2000),  # attempts
        ("team", 3, 2000),  # sub-agents: their blocks are not the episode's
    ],
)
def test_kept_traces_equal_the_files(name: str, episodes: int, keep: int, tmp_path: Path):
    _check(name, episodes, keep, tmp_path / "run")


def test_kept_traces_through_a_pool(tmp_path: Path):
    with open_executor(ExecutorConfig("process", 2)) as pool:
        _check("compare_flight_booking", 10, 2000, tmp_path / "run", executor=pool, parallelism=2)


def test_result_trace_with_labels_is_the_files_trace(tmp_path: Path):
    from opar_sim.core.loop import run_episode
    from opar_sim.core.seeding import episode_seed
    from opar_sim.rundir import iter_traces, result_trace
    from opar_sim.spec.build import build

    spec = load_spec(EXPERIMENTS / "compare_flight_booking.toml").model_copy(update={"episodes": 6})
    run_experiment(spec, tmp_path / "run")
    parts = build(spec)
    task, agent = parts.make_task(), parts.make_agent()
    first = [t for t in iter_traces(tmp_path / "run") if t.controller == parts.controllers[0][0]]
    assert len(first) == 6
    for read in first:
        episode = read.episode
        law = parts.controllers[0][1]()
        result = run_episode(
            task, agent, law, parts.limits, episode_seed(spec.seed, episode), episode=episode
        )
        built = result_trace(result)
        assert built is not None
        assert built.signals == read.signals and built.actions == read.actions
        assert built.time.tolist() == read.time.tolist()


def test_no_traces_unless_asked(tmp_path: Path):
    spec = load_spec(EXPERIMENTS / "flight_booking.toml").model_copy(update={"episodes": 3})
    assert run_experiment(spec, tmp_path / "run").traces is None
