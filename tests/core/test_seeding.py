"""Per-episode streams: trial 1 is the episode's own streams; later trials share only the task."""

from __future__ import annotations

import pytest

import controllers
import environments
from opar_sim.agents import SimulatedAgent
from opar_sim.core.limits import Limits
from opar_sim.core.loop import run_episode
from opar_sim.core.seeding import episode_seed, streams


def _draws(seed: int, episode: int, trial: int | None) -> dict[str, list[float]]:
    seq = episode_seed(seed, episode)
    s = streams(seq) if trial is None else streams(seq, trial)
    return {name: getattr(s, name).random(5).tolist() for name in s.__slots__}


def test_trial_1_is_exactly_the_streams_of_an_episode_without_trials():
    assert _draws(3, 7, 1) == _draws(3, 7, None)


def test_every_trial_shares_the_task_stream_and_gets_fresh_others():
    trials = [_draws(3, 7, t) for t in range(1, 5)]
    assert all(d["task"] == trials[0]["task"] for d in trials)
    for name in ("agent", "tools", "controller"):
        assert len({tuple(d[name]) for d in trials}) == 4  # four different streams
    assert _draws(3, 8, 1)["task"] != trials[0]["task"]  # another episode, another world


def test_trials_of_one_world_see_the_same_flights_but_act_differently():
    def once(trial: int) -> tuple[list[tuple[float, int]], list[str | None]]:
        task = environments.make("flight_booking", fare_change_rate=0.0)
        limits = Limits()
        result = run_episode(
            task,
            SimulatedAgent(),
            controllers.make("pid"),
            limits,
            episode_seed(11, 4),
            trial=trial,
        )
        world = [(f.price, f.hour) for f in task.flights]
        return world, [r.action.label() if r.action else None for r in result.steps]

    runs = [once(t) for t in range(1, 5)]
    assert all(world == runs[0][0] for world, _ in runs)
    assert len({tuple(actions) for _, actions in runs}) > 1


def test_a_trial_below_1_is_refused():
    with pytest.raises(ValueError, match="trial must be >= 1"):
        streams(episode_seed(0, 0), 0)
