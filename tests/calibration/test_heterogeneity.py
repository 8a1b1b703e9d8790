"""Calibrating task heterogeneity to a record, checked on held-out tasks (issue 13).

The model is ``tau_airline_model_v1`` (the shipped model's shape before the latent
task length); the records are simulated from it with known task effects (and
lengths), so the truth is known: a record from the model itself must fit, and
records from a truth with a feature the fit lacks must be
detected as not fitting on the held-out tasks.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from opar_sim.calibration import heterogeneity as h
from opar_sim.calibration.heterogeneity.validation import _check
from opar_sim.cli.main import main
from opar_sim.running.runner import run_experiment
from opar_sim.spec.build import load_spec
from opar_sim.spec.edit import apply_changes
from tests.conftest import EXPERIMENTS

# the model without the latent task length (the shipped one has it, fitted to GPT-4o)
MODEL = EXPERIMENTS / "tau_airline_model_v1.toml"
FEATURES = [0.0, 1.0, 2.0, 3.0, 4.0]


def _record(tmp_path_factory, name: str, changes: dict, worlds: int = 60) -> h.Record:
    spec = apply_changes(load_spec(MODEL), changes | {"episodes": worlds, "seed": 11}, "truth")
    out = tmp_path_factory.mktemp(name)
    run_experiment(spec, out)
    return h.load_record(out)


@pytest.fixture(scope="module")
def table():
    # the calibrate default: with 24 a cell the table's own noise makes the model's records fail
    return h.build_table(load_spec(MODEL), FEATURES, "write_actions", episodes=48, seed=0)


# a moderate task effect falling with the writes (the model's own record, and the length truth)
MODERATE_EFFECT = {
    "agent.params.task_effect_mean": 1.0,
    "agent.params.task_effect_slope": -0.5,
    "agent.params.task_effect_sd": 1.5,
}


@pytest.fixture(scope="module")
def own(tmp_path_factory):
    """A record of the model itself: a moderate task effect falling with the writes."""
    return _record(tmp_path_factory, "own", MODERATE_EFFECT)


@pytest.fixture(scope="module")
def bimodal(tmp_path_factory):
    """Tasks either easy or hopeless: a spread of 4 on the logit of plan quality."""
    effect = {"agent.params.task_effect_mean": 1.0, "agent.params.task_effect_sd": 4.0}
    return _record(tmp_path_factory, "bimodal", effect)


def test_the_record_reads_tasks_trials_and_features(own):
    assert len(own.tasks) == 60 and own.runs == 240
    assert {len(t.success) for t in own.tasks} == {4}
    assert {t.feature for t in own.tasks} <= set(FEATURES)


def test_grid_weights_integrate_a_normal():
    table = h.Table(np.array(h.U_GRID), {}, {}, 0)
    w = h.grid_weights(table, 0.3, 1.2)
    assert w.sum() == pytest.approx(1.0)
    assert float(np.dot(w, table.u)) == pytest.approx(0.3, abs=1e-6)  # linear: exact mean
    assert float(np.dot(w, (table.u - 0.3) ** 2)) == pytest.approx(1.44 + 1 / 6, abs=0.05)
    point = h.grid_weights(table, 0.25, 0.0)
    assert point[5] == pytest.approx(0.75) and point[6] == pytest.approx(0.25)  # u 0 and 1


def test_the_record_statistics_are_taubenchs():
    tasks = [
        h.TaskRuns(0, 0.0, np.array([True, True, False, False]), np.array([2, 3, 5, 7])),
        h.TaskRuns(1, 1.0, np.array([True, True, True, True]), np.array([4, 4, 4, 4])),
    ]
    s = h.record_stats(tasks, 4)
    assert s.pass_k == pytest.approx([(0.5 + 1) / 2, (1 / 6 + 1) / 2, 0.5, 0.5])
    assert s.success_calls == pytest.approx(21 / 6) and s.failure_calls == pytest.approx(6.0)


def test_the_spread_is_the_variance_of_successes_per_task():
    y = np.array([[1, 1, 0, 0, 1, 1, 1, 1, 0, 0, 0, 1]], dtype=bool)  # tasks of 4, 4, 4 runs
    hist = h.success_histogram(y, [4, 4, 4], 4)
    assert hist.tolist() == [[0, 1, 1, 0, 1]]  # 2, 4 and 1 successes
    assert h.spread(hist)[0] == pytest.approx(np.var([2, 4, 1]))
    assert h.success_histogram(y, [4, 4, 4], 2).tolist() == [[1, 0, 2]]  # first 2 runs: 2, 2, 0


def test_parametric_pvalues_rank_the_record_among_the_simulated():
    sims = {"pass^1": np.arange(1.0, 100.0), h.KS: np.arange(1.0, 100.0)}
    obs = {"pass^1": np.array([5.0]), h.KS: np.array([5.0])}
    p = h.parametric_pvalues(obs, sims)
    assert p["pass^1"] == pytest.approx(2 * 6 / 100)  # two-sided: 5 of 99 at or below, + 1
    assert p[h.KS] == pytest.approx(96 / 100)  # one-sided: 95 at or above, + 1
    nan = h.parametric_pvalues({"pass^1": np.array([math.nan])}, {"pass^1": np.ones(9)})
    assert nan["pass^1"] == 1.0


def test_a_record_of_the_model_fits_on_held_out_tasks(own, table):
    v = h.validate(own, table, folds=5, seed=0)
    assert v.fits, v.failures()
    # the fold verdict: 8 tests a fold, Holm-adjusted over all 40 together
    assert all(len(c.adjusted) == 8 for c in v.folds)
    raw = [p for c in v.folds for p in c.pvalues.values()]
    assert min(p for c in v.folds for p in c.adjusted.values()) == pytest.approx(
        min(1.0, 40 * min(raw))
    )
    assert v.effect.slope < 0  # harder with more writes, as the truth
    assert 0.5 < v.effect.sd < 3.0
    assert not v.in_sample.held_out and len(v.folds) == 5


def test_a_homogeneous_fit_of_bimodal_tasks_is_detected(bimodal, table):
    wrong = h.validate(bimodal, table, folds=5, seed=0, homogeneous=True)
    assert not wrong.fits
    # all-or-nothing tasks: one shift for all cannot give the record's pass^k together,
    # nor its spread of successes over tasks
    assert any(name.startswith("pass^") for name in wrong.pooled.failures())
    assert h.SPREAD in wrong.pooled.failures()
    assert any(h.SPREAD in c.rejected() for c in wrong.folds)  # and fold by fold, after Holm
    right = h.validate(bimodal, table, folds=5, seed=0)
    assert right.fits, right.failures()


def test_too_little_spread_is_detected(tmp_path_factory, table):
    """A truth with no task effect, fitted with the spread fixed large: too little spread."""
    flat = _record(tmp_path_factory, "flat", {"agent.params.task_effect_mean": 1.0})
    v = h.validate(flat, table, folds=5, seed=0)
    forced = h.Fitted(v.fitted.structure, table, h.Effect(v.effect.mean, 0.0, 4.0), math.nan)
    check = _check("forced", [(flat.tasks, forced)], 4, np.random.default_rng(0))
    assert h.SPREAD in check.failures()
    recorded, expected = (
        h.spread(np.array([c])) for c in (check.spread_recorded, check.spread_expected)
    )
    assert recorded < expected  # rejected in the lower tail: fewer all-or-nothing tasks


def test_lengths_the_model_cannot_produce_are_detected(tmp_path_factory, table):
    longer = _record(
        tmp_path_factory,
        "longer",
        {"task.params.reads": 6, "task.params.reads_max": 8, "agent.params.task_effect_sd": 1.0},
    )
    v = h.validate(longer, table, folds=5, seed=0)
    assert not v.fits
    assert "KS tool calls" in v.pooled.failures()


def test_calibrate_reports_the_held_out_table(own, capsys):
    run = own.source
    argv = ["calibrate", run, "--model", str(MODEL), "--direct", "--episodes", "50"]
    assert main([*argv, "--cell-episodes", "24"]) == 0
    out = capsys.readouterr().out
    assert "held-out, pooled" in out and "not a validation" in out
    assert "fits: every held-out check passed" in out
    report = json.loads((Path(own.source) / "calibration.json").read_text())
    assert report["validation"]["in_sample"]["held_out"] is False
    assert set(report["validation"]["effect"]) == {"mean", "slope", "sd"}
    assert all(math.isfinite(report["params"][k]) for k in ("task_effect_mean", "task_effect_sd"))


# -- the latent task length ------------------------------------------------------------------


def test_length_weights_are_the_negative_binomial_on_consecutive_lengths():
    from scipy import stats

    lengths = np.arange(0.0, 13.0)
    table = h.Table(np.array(h.U_GRID), {}, {}, 0, lengths)
    m, k = 2.2, 0.7
    w = h.length_weights(table, h.Effect(0.0, 0.0, 1.0, m, k))
    dist = stats.nbinom(k, k / (k + m))
    expected = np.append(dist.pmf(np.arange(12)), dist.sf(11))  # the tail on the last length
    assert w == pytest.approx(expected, abs=1e-12)


def test_length_weights_on_a_sparse_grid_keep_the_mean():
    """An integer between two grid lengths shares its mass linearly: E[min(r, top)] is kept."""
    from scipy import stats

    table = h.Table(np.array(h.U_GRID), {}, {}, 0, np.array([float(r) for r in h.LENGTH_GRID]))
    m, k = 3.5, 1.8
    w = h.length_weights(table, h.Effect(0.0, 0.0, 1.0, m, k))
    dist = stats.nbinom(k, k / (k + m))
    top = h.LENGTH_GRID[-1]
    capped = float(np.dot(dist.pmf(np.arange(top)), np.arange(top)) + top * dist.sf(top - 1))
    assert w.sum() == pytest.approx(1.0, abs=1e-12)
    assert float(np.dot(w, table.lengths)) == pytest.approx(capped, abs=1e-9)
    # without a fitted length (or a table without lengths) all weight is on the first
    assert h.length_weights(table, h.Effect(0.0, 0.0, 1.0)).tolist() == [1.0] + [0.0] * 10


def test_cell_weights_are_length_major_products():
    table = h.Table(np.array(h.U_GRID), {}, {}, 0, np.array([0.0, 1.0, 2.0]))
    effect = h.Effect(0.5, 0.25, 1.0, 0.8, 2.0)
    joint = h.cell_weights(table, 2.0, effect)
    pi = h.length_weights(table, effect)
    w = h.grid_weights(table, 0.5 + 0.25 * 2.0, 1.0)
    assert joint.shape == (3 * len(h.U_GRID),)
    assert joint.reshape(3, -1) == pytest.approx(np.outer(pi, w), abs=1e-15)
    both = h.cell_weights(table, np.array([2.0, 0.0]), effect)
    assert both.shape == (2, 3 * len(h.U_GRID)) and both[0] == pytest.approx(joint, abs=1e-15)


TEST_LENGTHS = (0, 2, 4, 6, 9)  # a coarser grid than calibrate's LENGTH_GRID: a faster table


@pytest.fixture(scope="module")
def length_table():
    """The model's table with the latent length: a cell per (writes, r, u), 48 episodes each."""
    spec = load_spec(MODEL)
    return h.build_table(spec, FEATURES, "write_actions", 48, seed=0, lengths=TEST_LENGTHS)


@pytest.fixture(scope="module")
def spread_lengths(tmp_path_factory):
    """A truth whose tasks differ in length at one write count: r ~ geometric, mean 3."""
    changes = {
        **MODERATE_EFFECT,
        "task.params.extra_reads_mean": 3.0,
        "task.params.extra_reads_size": 1.0,
    }
    return _record(tmp_path_factory, "lengths", changes)


def test_a_task_length_spread_is_detected_without_the_latent_length(spread_lengths, table):
    wrong = h.validate(spread_lengths, table, folds=5, seed=0)
    assert not wrong.fits
    assert "KS tool calls" in wrong.pooled.failures()  # the lengths of runs, not the successes


def test_the_latent_length_fits_a_task_length_spread(spread_lengths, length_table):
    right = h.validate(spread_lengths, length_table, folds=5, seed=0)
    assert right.fits, right.failures()
    assert 1.5 < right.effect.length_mean < 5.0  # the truth's 3 (geometric: a wide estimate)


def test_a_record_of_the_model_fits_with_the_latent_length_too(own, length_table):
    v = h.validate(own, length_table, folds=5, seed=0)
    assert v.fits, v.failures()
    # the truth has none; 60 tasks do not pin the mean near 0 (1.09 here, against 3 above)
    assert v.effect.length_mean is not None and v.effect.length_mean < 1.5
