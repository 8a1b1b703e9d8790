"""``tool_chain``'s latent task length (issue 13): r extra lookups per world, one per world."""

from __future__ import annotations

import numpy as np
import pytest
import simpy

import environments
from opar_sim.core.seeding import episode_seed, streams


def _reset(task, world: int, trial: int = 1, seed: int = 0) -> None:
    rngs = streams(episode_seed(seed, world), trial)
    task.reset(simpy.Environment(), rngs.task, rngs.tools)


def _extra(task) -> int:
    """The world's r: its sequence's lookups beyond the base reads and the writes' own."""
    p = task.params
    return task.features["actions"] - task.writes * (p.reads_per_write + 1) - p.reads


def test_off_by_default_and_the_worlds_are_unchanged():
    """With the latent length on, every other draw of the world is the one without it."""
    plain = environments.make("tool_chain", reads=1)
    long = environments.make("tool_chain", reads=1, extra_reads_mean=3.0, extra_reads_size=2.0)
    assert plain.params.extra_reads_mean == 0 and plain.params.extra_reads is None
    extras = []
    for world in range(50):
        _reset(plain, world)
        assert _extra(plain) == 0
        after_plain = plain.rng.random()
        _reset(long, world)
        assert long.writes == plain.writes
        assert long.rng.random() == after_plain  # the world's own stream did not move
        extras.append(_extra(long))
    assert len(set(extras)) > 3  # it is drawn, world by world


def test_every_trial_of_a_world_shares_its_length():
    task = environments.make("tool_chain", extra_reads_mean=4.0, extra_reads_size=1.0)
    for world in range(30):
        seen = set()
        for trial in (1, 2, 3, 4):
            _reset(task, world, trial)
            seen.add(_extra(task))
        assert len(seen) == 1


def test_the_length_is_a_negative_binomial_with_the_given_mean_and_size():
    """Against scipy's nbinom: a chi-square goodness of fit over 4,000 worlds."""
    from scipy import stats

    m, k = 2.5, 1.5
    task = environments.make(
        "tool_chain", write_weights=[1.0], reads=0, extra_reads_mean=m, extra_reads_size=k
    )
    r = []
    for world in range(4000):
        _reset(task, world, seed=3)
        r.append(_extra(task))
    values = np.array(r)
    top = 8
    observed = np.bincount(np.minimum(values, top), minlength=top + 1)
    dist = stats.nbinom(k, k / (k + m))
    expected = np.append(dist.pmf(np.arange(top)), dist.sf(top - 1)) * len(values)
    assert stats.chisquare(observed, expected).pvalue > 0.001
    assert values.mean() == pytest.approx(m, abs=4 * np.sqrt(dist.var() / len(values)))


def test_a_fixed_length_is_added_to_every_world():
    task = environments.make(
        "tool_chain", write_weights=[0, 1], reads=1, reads_per_write=2, extra_reads=5
    )
    _reset(task, 0)
    assert task.features == {"write_actions": 1, "actions": 1 + 5 + 3}
    assert [s.tool for s in task.plan_template()] == ["lookup"] * 8 + ["write"]


def test_a_share_of_wrong_writes_looks_like_the_last_step():
    """``wrong_write_done_share``: of 8 wrong writes (0.4 of 20), the first 4 look final."""
    from opar_sim.core.types import Action

    for key, believed in (("wrong 0", 1.0), ("wrong 3", 1.0), ("wrong 4", 1 / 6)):
        task = environments.make(
            "tool_chain",
            write_weights=[0, 0, 1],
            reads=2,
            reads_per_write=1,
            wrong_write_share=0.4,
            wrong_write_done_share=0.5,
        )
        _reset(task, 0)
        task._apply(Action.of("write", key=key))
        assert not task.feasible
        assert task.observe().visible_progress == pytest.approx(believed)
    plain = environments.make("tool_chain", write_weights=[0, 0, 1], reads=2, reads_per_write=1)
    _reset(plain, 0)
    plain._apply(Action.of("write", key="wrong 0"))
    assert plain.observe().visible_progress == pytest.approx(1 / 6)  # off by default
