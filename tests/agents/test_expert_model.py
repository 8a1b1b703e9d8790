"""The noisy expert's model: the interpreted rule and the batch engine's compiled one agree.

``SimulatedAgent`` (the SimPy engine) runs each rule of ``expert_model`` as Python
on floats; the batch engine's row loops (``engines.batch.phases``) run the same
function compiled by Numba, with the knobs in ``phases.Knobs``.  Hypothesis draws
the inputs, and the compiled result must equal the interpreted one exactly (``==``
on floats, not a tolerance).  Heterogeneity's array rules are proved the same way.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit

from opar_sim.agents import expert_model as m
from opar_sim.agents.simulated import SimulatedAgent
from opar_sim.engines.batch.phases import Knobs

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
# the rules as the row loops run them: compiled from the module's own functions
compiled = {
    name: njit(getattr(m, name))
    for name in (
        "call_seconds",
        "step_completions",
        "step_token_bound",
        "result_tokens",
        "clip_quality",
        "context_quality",
        "drift_after",
        "sense",
    )
}


@settings(max_examples=200, deadline=None)
@given(params, st.lists(row, min_size=1, max_size=20))
def test_sense_interpreted_and_compiled_agree(p: m.SimulatedAgentParams, rows: list) -> None:
    k = Knobs.of(p)
    for visible, drift, ok, productive, zt, za, zp in rows:
        after = m.drift_after(drift, productive)
        assert compiled["drift_after"](drift, productive) == after
        floats = m.sense(visible, after, ok, productive, (zt, za, zp), p.noise, p)
        assert compiled["sense"](visible, after, ok, productive, (zt, za, zp), p.noise, k) == (
            floats
        )


@settings(max_examples=200, deadline=None)
@given(params, st.lists(st.tuples(unit, st.integers(0, 20_000)), min_size=1, max_size=20))
def test_context_quality_interpreted_and_compiled_agree(
    p: m.SimulatedAgentParams, rows: list
) -> None:
    k = Knobs.of(p)
    for q, c in rows:
        assert compiled["context_quality"](q, np.int32(c), k) == m.context_quality(q, c, p)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(-1.0, 2.0), min_size=1, max_size=20), st.lists(st.integers(0, 500)))
def test_clips_interpreted_and_compiled_agree(qualities: list, tokens: list) -> None:
    assert [compiled["clip_quality"](q) for q in qualities] == [
        m.clip_quality(q) for q in qualities
    ]
    assert [compiled["result_tokens"](t) for t in tokens] == [m.result_tokens(t) for t in tokens]


@settings(max_examples=100, deadline=None)
@given(params, st.integers(0, 100_000), st.integers(0, 500), st.integers(1, 500))
def test_costs_interpreted_and_compiled_agree(
    p: m.SimulatedAgentParams, context: int, completion: int, maximum: int
) -> None:
    for knobs, agent in ((p, p), (p.model_copy(update={"context_max": maximum}),) * 2):
        k = Knobs.of(knobs)
        assert compiled["call_seconds"](np.int32(context), completion, k) == m.call_seconds(
            context, completion, agent
        )
        for fresh in (False, True):
            assert compiled["step_completions"](fresh, k) == m.step_completions(fresh, agent)
            assert compiled["step_token_bound"](np.int32(context), fresh, k) == (
                m.step_token_bound(context, fresh, agent)
            )


@settings(max_examples=100, deadline=None)
@given(params, st.integers(0, 100_000), st.integers(0, 500), st.integers(1, 500))
def test_memory_compression_adds_a_fifth_call_to_the_bound(
    p: m.SimulatedAgentParams, context: int, completion: int, maximum: int
) -> None:
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
