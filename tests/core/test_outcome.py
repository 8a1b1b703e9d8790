"""The one outcome judge: the table of docs/design.md §2, and its scalar and array forms agree."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from opar_sim.core.outcome import (
    INVALID_FORMAT,
    MAX_STEPS,
    TERMINATE_TABLE,
    TERMINATED,
    Ending,
    judge,
    judge_array,
)
from opar_sim.core.types import TRUNCATION_REASONS, Outcome
from opar_sim.engines.batch.engine import ENDINGS

FLAGS = list(itertools.product((False, True), repeat=3))  # (complete, give_up, feasible)
ENDS = [
    TERMINATED,
    INVALID_FORMAT,
    Ending(error="backend_unavailable"),
    *(Ending(truncated=reason) for reason in TRUNCATION_REASONS),
]


@pytest.mark.parametrize(
    ("complete", "give_up", "feasible", "expected"),
    [
        (True, False, True, "success"),
        (True, True, False, "success"),  # a done task is a success whatever was claimed
        (False, False, True, "premature"),
        (False, False, False, "premature"),
        (False, True, True, "abandoned"),
        (False, True, False, "gave_up"),
    ],
)
def test_a_terminate_is_judged_from_the_world_then_the_claim(complete, give_up, feasible, expected):
    assert judge(TERMINATED, complete, give_up, feasible) == expected


def test_the_terminate_table_covers_every_combination_once():
    assert sorted(TERMINATE_TABLE) == sorted(FLAGS)
    assert set(TERMINATE_TABLE.values()) == {
        Outcome.SUCCESS,
        Outcome.PREMATURE,
        Outcome.ABANDONED,
        Outcome.GAVE_UP,
    }


@pytest.mark.parametrize("flags", FLAGS)
def test_an_error_or_a_truncation_is_its_own_label_whatever_the_world(flags):
    assert judge(INVALID_FORMAT, *flags) == "error:invalid_format"
    assert judge(MAX_STEPS, *flags) == "truncated:max_steps"
    assert judge(Ending(truncated="stuck"), *flags) == "truncated:stuck"


def test_an_error_wins_over_a_truncation():
    assert judge(Ending(error="backend_unavailable", truncated="time"), True, False, True) == (
        "error:backend_unavailable"
    )


@pytest.mark.parametrize(
    "kwargs", [{}, {"terminated": True, "error": "x"}, {"terminated": True, "truncated": "time"}]
)
def test_an_ending_is_exactly_one_kind(kwargs):
    with pytest.raises(ValueError, match=r"Ending|TERMINATE"):
        Ending(**kwargs)


def test_the_array_form_agrees_with_the_scalar_form_on_every_combination():
    cases = list(itertools.product(range(len(ENDS)), FLAGS))
    code = np.array([c for c, _ in cases])
    complete, give_up, feasible = (np.array([f[k] for _, f in cases]) for k in range(3))
    judged = judge_array(code, ENDS, complete, give_up, feasible)
    assert judged.tolist() == [judge(ENDS[c], *flags) for c, flags in cases]


@given(
    st.lists(
        st.tuples(st.integers(1, len(ENDINGS) - 1), st.booleans(), st.booleans(), st.booleans()),
        max_size=40,
    )
)
def test_the_batch_engines_codes_are_judged_as_the_scalar_judge_does(rows):
    columns = list(zip(*rows, strict=True)) if rows else [(), (), (), ()]
    code, complete, give_up, feasible = (np.array(c) for c in columns)
    judged = judge_array(code.astype(np.int64), ENDINGS, complete, give_up, feasible).tolist()
    assert judged == [judge(ENDINGS[c], *flags) for c, *flags in rows]  # type: ignore[arg-type]


def test_the_array_form_refuses_an_episode_still_running():
    with pytest.raises(ValueError, match="still running"):
        judge_array(np.array([0]), ENDINGS, [True], [False], [True])
