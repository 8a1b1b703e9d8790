"""The batch engine's episodes.jsonl lines: ``to_line`` of each episode's row, byte for byte.

``lines.episode_lines`` writes no row object: it codes the text columns once
(``coding``), and a compiled loop (``line_kernel``) fills a line template.  These tests
hold it to the contract it replaces: each line is ``to_line`` (orjson) of the row dict
the SimPy engine's ``episode_row`` writes, built here episode by episode; the loop
itself against orjson on random rows (numbers at their extremes, every float form orjson
has, texts that need escapes); and the codes against ``dict.fromkeys`` order.
"""

from __future__ import annotations

import math

import numpy as np
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from opar_sim.engines.batch import run_batch
from opar_sim.engines.batch.coding import (
    answer_codes,
    coded,
    combinations,
    first_rows,
    outcome_codes,
)
from opar_sim.engines.batch.line_kernel import NULL
from opar_sim.engines.batch.lines import episode_lines, join_lines, run_seed
from opar_sim.rundir import to_line
from opar_sim.spec.build import load_spec
from opar_sim.spec.schema import ControllerSpec
from tests.conftest import EXPERIMENTS, SPEC

EPISODES = 300


def _rows(spec, controller, start, result):
    """Each episode's row as the SimPy engine's ``episode_row`` orders it, one dict each."""
    outcomes, answers = result.outcomes(), result.answers()
    tokens = result.tokens
    for i in range(len(result.steps)):
        steps = int(result.steps[i])
        yield {
            "episode": start + i,
            "seed": run_seed(spec),
            "task": spec.task.name,
            "agent": "simulated",
            "controller": spec.controller_list()[controller].name,
            "outcome": outcomes[i],
            "success": outcomes[i] == "success",
            "steps": steps,
            "answer": answers[i],
            "best_step": int(result.best_step[i]) if steps else None,
            "final_progress": float(result.progress[i]),
            "complete": bool(result.complete[i]),
            "feasible": bool(result.feasible[i]),
            "prompt_tokens": int(result.prompt_tokens[i]),
            "completion_tokens": int(result.completion_tokens[i]),
            "tokens": int(tokens[i]),
            "llm_calls": int(result.llm_calls[i]),
            "sim_seconds": float(result.sim_seconds[i]),
            "tool_calls": int(result.tool_calls[i]),
            "replans": int(result.replans[i]),
            "sub_tokens": 0,
            "attempt": 1,
        }


@pytest.mark.parametrize(
    "path", [SPEC, str(EXPERIMENTS / "research_qa_faults.toml")], ids=["flight", "research"]
)
def test_each_line_is_to_line_of_the_episodes_row(path):
    compare = [ControllerSpec(name="pid"), ControllerSpec(name="threshold")]
    spec = load_spec(path).model_copy(update={"episodes": EPISODES, "compare": compare})
    for controller in range(2):
        result = run_batch(spec, controller, 0, EPISODES)
        start = 7 * EPISODES * controller  # any first episode number
        expected = b"".join(to_line(row).encode() for row in _rows(spec, controller, start, result))
        assert bytes(episode_lines(spec, controller, start, result)) == expected


_FLOATS = st.one_of(
    st.sampled_from([1.0, 0.1, 1e-05, 1e-7, 1e16, 1e22, -0.0, 0.0, 5e-324, 2.0**53]),
    st.sampled_from([123456789012345678.0, 1.7976931348623157e308, math.nan, math.inf]),
    st.floats(allow_nan=True, allow_infinity=True),
)
_INTS = st.one_of(
    st.none(), st.integers(min_value=-(2**63) + 1, max_value=2**63 - 1), st.integers(-20, 20)
)
_TEXTS = st.text(alphabet=st.characters(codec="utf-8"), max_size=12)
_ROW = st.tuples(_INTS, _FLOATS, st.booleans(), _TEXTS, _FLOATS)


@settings(max_examples=300, deadline=None)
@given(rows=st.lists(_ROW, max_size=40))
def test_join_lines_writes_what_orjson_writes_of_each_row(rows):
    keys = ("n", "x", "ok", "text", "y")
    expected = b"".join(
        orjson.dumps(dict(zip(keys, row, strict=True)), option=orjson.OPT_APPEND_NEWLINE)
        for row in rows
    )
    pieces = [b'{"n":', b',"x":', b',"ok":', b',"text":', b',"y":', b"}\n"]
    columns = list(zip(*rows, strict=True)) if rows else [()] * len(keys)
    ints = np.array([NULL if v is None else v for v in columns[0]], np.int64)
    holes = [
        ("int", ints),
        ("float", np.array(columns[1], np.float64)),
        ("bool", np.array(columns[2], bool)),
        ("text", coded(list(columns[3]))),
        ("float", np.array(columns[4], np.float64)),
    ]
    assert bytes(join_lines(pieces, holes)) == expected


@given(values=st.lists(st.sampled_from(["b", "a", "", "é", "c"]), max_size=30))
def test_codes_follow_first_appearance(values):
    codes, distinct = coded(values)
    assert distinct == list(dict.fromkeys(values))
    assert [distinct[c] for c in codes.tolist()] == values
    assert first_rows(codes).tolist() == [values.index(v) for v in distinct]


def test_combinations_tell_values_apart_by_their_bits():
    price = np.array([0.0, -0.0, 0.0, 1.0, -0.0])
    pay = np.array([1, 1, 1, 1, 2], np.int8)
    assert combinations([price, pay], 5).tolist() == [0, 1, 0, 2, 3]
    assert combinations([], 3).tolist() == [0, 0, 0]


def test_the_codes_spell_the_answers_and_outcomes_episode_by_episode():
    spec = load_spec(SPEC).model_copy(update={"episodes": EPISODES})
    result = run_batch(spec, 0, 0, EPISODES)
    codes, answers = answer_codes(result)
    assert [answers[c] for c in codes.tolist()] == result.answers()
    assert answers == list(dict.fromkeys(result.answers()))
    assert len(answers) > 10  # many distinct answers: each worded once
    codes, outcomes = outcome_codes(result)
    assert [outcomes[c] for c in codes.tolist()] == result.outcomes()
