"""The shared paired statistics: columns pair by (spec, episode); differences by hand."""

from __future__ import annotations

import pytest

from opar_sim.measure.paired import paired_against, paired_columns
from opar_sim.spec.schema import Objective

OBJ = Objective(failure=1.0, tokens=0.001)


def _rows(wins: list[bool], tokens: list[float], spec: str = "") -> list[dict[str, object]]:
    rows = [
        {"episode": i, "success": w, "tokens": t, "steps": 5, "replans": 0}
        for i, (w, t) in enumerate(zip(wins, tokens, strict=True))
    ]
    for r in rows:
        if spec:
            r["spec"] = spec
    return rows


def test_columns_sort_by_episode_and_pair_by_hand() -> None:
    a = _rows([True, True, False, True], [100, 200, 300, 400])
    b = _rows([True, False, False, False], [150, 250, 350, 450])
    cols = paired_columns([a, list(reversed(b))], ["a", "b"], OBJ)
    assert cols.episodes == [("", 0), ("", 1), ("", 2), ("", 3)]
    assert cols.wins[1] == [True, False, False, False]
    p = paired_against(cols, 0, 1, seed=1)
    assert p.n == 4
    assert p.success == 0.75
    assert p.success_diff == 0.5
    assert p.discordant == (2, 0)  # episodes 1 and 3: only a succeeded
    assert p.mean_tokens == 250.0
    assert p.tokens_diff.mean == -50.0  # every episode 50 tokens fewer
    assert (p.tokens_diff.low, p.tokens_diff.high) == (-50.0, -50.0)
    # objective: failure + 0.001 * tokens; a = [0.1, 0.2, 1.3, 0.4], b = [0.15, 1.25, 1.35, 1.45]
    assert p.objective == pytest.approx(0.5)
    assert p.objective_diff.mean == pytest.approx(-0.55)
    assert paired_against(cols, 1, 1, seed=1).objective_diff.mean == 0.0


def test_pooled_rows_pair_within_each_spec() -> None:
    a = _rows([True], [1.0], "x") + _rows([False], [1.0], "y")
    b = _rows([False], [1.0], "y") + _rows([True], [1.0], "x")
    cols = paired_columns([a, b], ["a", "b"], OBJ)
    assert cols.episodes == [("x", 0), ("y", 0)]
    assert paired_against(cols, 0, 1, seed=0).discordant == (0, 0)


def test_unpaired_rows_name_the_law() -> None:
    a = _rows([True, False], [1.0, 1.0])
    with pytest.raises(ValueError, match="'late' was not run on the same held-out episodes"):
        paired_columns([a, a[:1]], ["early", "late"], OBJ)
