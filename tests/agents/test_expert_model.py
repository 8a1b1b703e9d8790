"""The noisy expert's model: each rule's float path and array path give the same bits.

``SimulatedAgent`` (the SimPy engine) calls the float functions, the batch engine
the array ones; hypothesis draws the inputs, and every element of the array result
must equal the float result exactly (``==`` on floats, not a tolerance).
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from opar_sim.agents import expert_model as m
from opar_sim.agents.simulated import SimulatedAgent

unit = st.floats(0.0, 1.0, allow_nan=False)
normal = st.floats(-6.0, 6.0, allow_nan=False)
params = st.builds(
    m.SimulatedAgentParams,
    bias=st.floats(-1.0, 1.0),
    noise=unit,
    context_knee=st.integers(1, 5000),
    context_decay=st.floats(0.0, 3.0),
    quality_floor=unit,
)
row = st.tuples(unit, unit, st.booleans(), st.booleans(), normal, normal, normal)


@settings(max_examples=200, deadline=None)
@given(params, st.lists(row, min_size=1, max_size=20))
def test_sense_floats_and_arrays_agree(p: m.SimulatedAgentParams, rows: list) -> None:
    visible, drift, ok, productive, zt, za, zp = (np.array(c) for c in zip(*rows, strict=True))
    noises = np.stack([zt, za, zp])
    arrays = m.sense_array(visible, drift, ok, productive, noises.copy(), p)
    for i, r in enumerate(rows):
        floats = m.sense(r[0], r[1], r[2], r[3], r[4:], p.noise, p)
        assert floats == tuple(float(a[i]) for a in arrays)


@settings(max_examples=200, deadline=None)
@given(params, st.lists(st.tuples(unit, st.integers(0, 20_000)), min_size=1, max_size=20))
def test_context_quality_floats_and_arrays_agree(p: m.SimulatedAgentParams, rows: list) -> None:
    quality = np.array([q for q, _ in rows])
    context = np.array([c for _, c in rows], np.int32)
    arrays = m.context_quality_array(quality, context, p)
    assert [m.context_quality(q, c, p) for q, c in rows] == arrays.tolist()


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(-1.0, 2.0), min_size=1, max_size=20), st.lists(st.integers(0, 500)))
def test_clips_floats_and_arrays_agree(qualities: list, tokens: list) -> None:
    expected = [m.clip_quality(q) for q in qualities]
    assert m.clip_quality_array(np.array(qualities)).tolist() == expected
    assert m.result_tokens_array(np.array(tokens, np.int64)).tolist() == [
        m.result_tokens(t) for t in tokens
    ]


@settings(max_examples=100, deadline=None)
@given(params, st.integers(0, 100_000), st.integers(0, 500), st.integers(1, 500))
def test_costs_are_one_function_for_floats_and_arrays(
    p: m.SimulatedAgentParams, context: int, completion: int, maximum: int
) -> None:
    seconds = m.call_seconds(np.array([context]), np.array([completion]), p)
    assert seconds.tolist() == [m.call_seconds(context, completion, p)]
    fresh = np.array([False, True])
    bounds = m.step_token_bound(np.array([context, context]), fresh, p)
    assert bounds.tolist() == [m.step_token_bound(context, f, p) for f in (False, True)]
    compressing = p.model_copy(update={"context_max": maximum})
    assert (
        m.step_token_bound(context, True, compressing)
        == m.step_token_bound(context, True, p)
        + context
        + (m.step_completions(True, p) + 200 + 64)
        + 2 * p.memory_tokens
    )


def test_the_agent_spends_and_bounds_by_the_model() -> None:
    """``SimulatedAgent`` reports the model's worst case (4 calls of the grown context)."""
    agent = SimulatedAgent()
    p = agent.params
    context = agent.context_tokens
    completions = p.plan_tokens + 2 * p.act_tokens + p.eval_tokens  # 420 by default
    assert completions == 420
    assert agent.max_step_tokens(True) == 4 * (context + completions + 200 + 64) + completions
    assert m.step_completions(False, p) == p.continue_tokens + 2 * p.act_tokens + p.eval_tokens


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(unit, st.floats(-20.0, 20.0)), min_size=1, max_size=30))
def test_shifted_floats_and_arrays_agree(rows: list) -> None:
    """Task heterogeneity's logit shift: the agent's float path, the batch engine's arrays."""
    quality = np.array([q for q, _ in rows])
    shift = np.array([u for _, u in rows])
    assert m.shifted_array(quality, shift).tolist() == [m.shifted(q, u) for q, u in rows]
