"""``held_rows`` gives the numbers of ``held_on_grid`` stacked row by row, bit for bit."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from opar_sim.figures.convergence import held_on_grid, held_rows

_series = st.lists(
    st.tuples(st.floats(0.0, 50.0, allow_nan=False), st.floats(-1.0, 2.0, allow_nan=False)),
    min_size=1,
    max_size=12,
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_series, min_size=1, max_size=8), st.integers(1, 40))
def test_same_as_held_on_grid_per_row(episodes: list[list[tuple[float, float]]], points: int):
    times = [np.sort(np.array([t for t, _ in e])) for e in episodes]
    values = [np.array([v for _, v in e]) for e in episodes]
    t_end = max(float(t[-1]) for t in times)
    grid = np.linspace(0.0, t_end, points)
    expected = np.array([held_on_grid(t, v, grid) for t, v in zip(times, values, strict=True)])
    assert np.array_equal(held_rows(times, values, grid), expected)


def test_held_before_the_first_sample_and_after_the_last():
    grid = np.array([0.0, 1.0, 2.5, 9.0])
    rows = held_rows(
        [np.array([1.0, 2.0]), np.array([0.0])], [np.array([0.3, 0.7]), np.array([1.0])], grid
    )
    assert rows.tolist() == [[0.0, 0.3, 0.7, 0.7], [1.0, 1.0, 1.0, 1.0]]


def test_an_episode_without_samples_holds_zero():
    grid = np.array([0.0, 1.0])
    rows = held_rows([np.array([]), np.array([0.5])], [np.array([]), np.array([0.4])], grid)
    assert rows.tolist() == [[0.0, 0.0], [0.0, 0.4]]
