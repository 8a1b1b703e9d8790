"""A batch run's rows in Parquet: what is written, read back by the one reader, and checked.

``steps.parquet`` and ``episodes.parquet`` (``rundir.columnar``) are recorded whole in
the manifest; every reader (columns, traces, iter_steps, read_episode_rows) reads them
as it reads the JSONL form, and a damaged file is named, never read.
"""

from __future__ import annotations

import json
import shutil

import numpy as np
import pandas as pd
import pytest

from opar_sim.measure.stats import Summary
from opar_sim.rundir import (
    EPISODES_FILE,
    MANIFEST_FILE,
    STEPS_FILE,
    STEPS_PARQUET,
    SUMMARY_FILE,
    RunDirError,
    check_run_dir,
    iter_episodes,
    iter_steps,
    iter_traces,
    read_jsonl,
)
from opar_sim.rundir.columnar import EPISODES_PARQUET, read_table
from opar_sim.rundir.columns import forget_step_columns, read_episode_rows, read_step_columns
from opar_sim.rundir.manifest import sha256
from opar_sim.running.runner import run_experiment
from opar_sim.spec.build import load_spec
from opar_sim.spec.schema import ControllerSpec
from tests.conftest import SPEC

EPISODES = 300


@pytest.fixture(scope="module")
def batch_run(tmp_path_factory):
    compare = [ControllerSpec(name="pid"), ControllerSpec(name="threshold")]
    spec = load_spec(SPEC).model_copy(update={"episodes": EPISODES, "seed": 3, "compare": compare})
    out = tmp_path_factory.mktemp("columnar") / "run"
    run_experiment(spec, out, engine="batch")
    return out


def _copy(run, tmp_path):
    forget_step_columns()
    copy = tmp_path / "copy"
    shutil.copytree(run, copy)
    return copy


def test_a_batch_run_writes_its_steps_as_parquet_and_its_episodes_in_both_forms(batch_run):
    names = {p.name for p in batch_run.iterdir()}
    assert {EPISODES_FILE, EPISODES_PARQUET, STEPS_PARQUET, MANIFEST_FILE} <= names
    assert STEPS_FILE not in names
    lines = (batch_run / MANIFEST_FILE).read_bytes().splitlines()
    whole = json.loads(lines[-1])["whole"]
    for name in (STEPS_PARQUET, EPISODES_PARQUET):
        data = (batch_run / name).read_bytes()
        assert whole[name] == [len(data), sha256(data)]
    assert check_run_dir(batch_run) == batch_run


def test_pandas_reads_the_same_rows_the_reader_yields(batch_run):
    frame = pd.read_parquet(batch_run / STEPS_PARQUET)
    rows = list(iter_steps(batch_run))
    assert len(frame) == len(rows)
    assert list(frame.columns) == list(rows[0])
    assert frame["delta_task"].tolist() == [r["delta_task"] for r in rows]
    assert frame["action"].astype(object).where(frame["action"].notna(), None).tolist() == [
        r["action"] for r in rows
    ]
    episodes = pd.read_parquet(batch_run / EPISODES_PARQUET)
    assert episodes.to_dict("records")[5]["outcome"] == list(iter_episodes(batch_run))[5]["outcome"]


def test_steps_are_in_file_order_and_each_episode_holds_its_steps(batch_run):
    rows = list(iter_steps(batch_run))
    order = [(r["controller"], r["episode"], r["step"]) for r in rows]
    controllers = ["pid", "threshold"]
    assert order == sorted(order, key=lambda k: (controllers.index(k[0]), k[1], k[2]))
    counts: dict[tuple[str, int], int] = {}
    for r in rows:
        counts[r["controller"], r["episode"]] = counts.get((r["controller"], r["episode"]), 0) + 1
    for episode in iter_episodes(batch_run):
        key = (episode["controller"], episode["episode"])
        assert counts.get(key, 0) == episode["steps"]
        assert [s["step"] for s in rows if (s["controller"], s["episode"]) == key][:3] == list(
            range(1, min(3, episode["steps"]) + 1)
        )


def test_the_step_columns_and_the_traces_agree(batch_run):
    forget_step_columns()
    columns = read_step_columns(batch_run)
    traces = list(iter_traces(batch_run))
    assert len(columns) == len(traces) == sum(1 for e in iter_episodes(batch_run) if e["steps"])
    assert columns.controllers == ["pid", "threshold"]
    for block in (0, 7, len(columns) - 1):
        a, b = columns.trace(block), traces[block]
        assert (a.controller, a.episode, a.agent) == (b.controller, b.episode, b.agent)
        assert np.array_equal(a.time, b.time) and np.array_equal(a.progress, b.progress)
        assert a.signals == b.signals and a.actions == b.actions
        assert a.terms == {}  # a batch run records no law terms


def test_read_episode_rows_reads_the_columns_as_the_lines(batch_run):
    fields = ("episode", "controller", "success", "steps", "tokens", "best_step")
    slim = list(read_episode_rows(batch_run, fields))
    lines = [{k: r[k] for k in fields if k in r} for r in iter_episodes(batch_run)]
    assert slim == lines
    assert len(slim) == 2 * EPISODES


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        ("flip", "does not match its manifest"),
        ("cut", "its manifest records"),
        ("append", "its manifest records"),
        ("remove", "missing"),
    ],
)
def test_a_damaged_parquet_file_is_named_never_read(batch_run, tmp_path, damage, message):
    run = _copy(batch_run, tmp_path)
    file = run / STEPS_PARQUET
    data = bytearray(file.read_bytes())
    if damage == "flip":
        data[len(data) // 2] ^= 0x01
        file.write_bytes(bytes(data))
    elif damage == "cut":
        file.write_bytes(bytes(data[:-100]))
    elif damage == "append":
        file.write_bytes(bytes(data) + bytes(data[:10]))
    else:
        file.unlink()
    with pytest.raises(RunDirError, match=message):
        if damage == "flip":  # same size: named when read
            read_step_columns(run)
        else:
            check_run_dir(run)


def test_a_parquet_file_the_manifest_does_not_record_is_refused(batch_run, tmp_path):
    run = _copy(batch_run, tmp_path)
    manifest = run / MANIFEST_FILE
    lines = manifest.read_bytes().splitlines(keepends=True)
    manifest.write_bytes(b"".join(lines[:-1]))  # the "whole" line removed
    with pytest.raises(RunDirError, match="does not record it"):
        read_table(run, STEPS_PARQUET)


def test_a_batch_runs_summary_adds_up_its_episode_lines(batch_run):
    summary = Summary()
    for row in read_jsonl(batch_run / EPISODES_FILE):
        summary.add_row(row)
    assert json.loads((batch_run / SUMMARY_FILE).read_text()) == json.loads(
        json.dumps(summary.as_dict())
    )


def test_the_run_keeps_the_figures_trajectories_as_the_files_give_them(tmp_path):
    compare = [ControllerSpec(name="pid"), ControllerSpec(name="threshold")]
    spec = load_spec(SPEC).model_copy(update={"episodes": 50, "seed": 4, "compare": compare})
    result = run_experiment(spec, tmp_path / "run", engine="batch", keep_traces=20)
    assert result.traces is not None and set(result.traces) == {"pid", "threshold"}
    read = list(iter_traces(result.out))
    for name, kept in result.traces.items():
        assert len(kept) == 20
        files = [t for t in read if t.controller == name][:20]
        for a, b in zip(kept, files, strict=True):
            assert (a.episode, a.signals, a.actions) == (b.episode, b.signals, b.actions)
            assert np.array_equal(a.time, b.time) and np.array_equal(a.estimate, b.estimate)
