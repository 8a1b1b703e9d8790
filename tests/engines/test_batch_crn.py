"""The batch engine gives every law of a run the same worlds: common random numbers (issue 26).

A law's episodes do not depend on where it stands in the run's list of controllers: the
PID alone and the PID second after the threshold law run the same episodes, bit for bit,
so episode i is the same world (and the same draws, as long as the decisions agree) for
every law, and ``compare --engine batch`` pairs like with like.
"""

from __future__ import annotations

import json

import numpy as np

from opar_sim.cli import main
from opar_sim.engines.batch import run_batch
from opar_sim.spec.build import load_spec, parse_spec
from tests.conftest import EXPERIMENTS

SPEC = EXPERIMENTS / "flight_booking.toml"


def _with(controllers: list[str]):
    data = load_spec(SPEC).model_dump()
    data["compare"] = [{"name": name} for name in controllers]
    return parse_spec(data, "test")


def test_a_law_runs_the_same_episodes_wherever_it_stands_in_the_list():
    alone = run_batch(_with(["pid"]), 0, 0, 400)
    second = run_batch(_with(["threshold", "pid"]), 1, 0, 400)
    for name in alone.__dataclass_fields__:
        if isinstance(getattr(alone, name), np.ndarray):
            assert np.array_equal(getattr(alone, name), getattr(second, name)), name
    assert alone.answers() == second.answers()


def test_compare_on_the_batch_engine_pairs_the_same_worlds(tmp_path, capsys):
    out = tmp_path / "run"
    argv = ["compare", str(SPEC), "--engine", "batch", "--episodes", "400", "--seed", "3"]
    assert main([*argv, "--controllers", "threshold,pid", "--out", str(out)]) == 0
    alone = tmp_path / "alone"
    assert main([*argv, "--controllers", "pid", "--out", str(alone)]) == 0
    capsys.readouterr()

    def rows(path, controller):
        lines = (path / "episodes.jsonl").read_text(encoding="utf-8").splitlines()
        return [json.loads(x) for x in lines if json.loads(x)["controller"] == controller]

    assert rows(out, "pid") == rows(alone, "pid")
    threshold = rows(out, "threshold")
    assert [r["episode"] for r in threshold] == [r["episode"] for r in rows(out, "pid")]


def test_compaction_drops_rows_not_a_law_s_tables():
    """A law's constant tables survive compaction even when they are as long as the rows.

    The SPRT's δ_act table has 15 cells; a shoot-out once compacted exactly 15 rows and
    ``take_rows`` cut the table with them (an IndexError three steps later).
    """
    from controllers.batch import from_scalar
    from controllers.sprt import ABANDON_LLR, SPRTReflector
    from opar_sim.core.twin import take_rows

    law = from_scalar(SPRTReflector())
    n = len(ABANDON_LLR)
    law.reset(n)
    take_rows(law, np.arange(10), n)
    scalar = SPRTReflector()
    assert [len(table) for table in law.tables] == [
        len(scalar.done_llr),
        len(scalar.abandon_llr),
    ]
    assert len(law.abandon) == 10
