"""tune, shootout, refit and claims called from Python (``opar_sim.api``) with a tiny budget.

Each study returns a ``StudyResult``: its table and its dict say the same numbers, and
the seeds its episodes ran on are the ledger's (``opar_sim.studies.seeds``).
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from opar_sim import api
from opar_sim.running import search
from opar_sim.running.sweep import run_sweep
from opar_sim.spec.build import load_spec
from opar_sim.spec.edit import with_overrides
from opar_sim.spec.schema import SpecError
from opar_sim.studies import shootout_pool
from opar_sim.studies import tune as tune_module
from opar_sim.studies.result import StudyResult
from opar_sim.studies.seeds import (
    CONFIRM_SEED,
    HOLDOUT_SEED,
    QUICK_SEEDS,
    RELEASE_HOLDOUT_SEED,
    TUNING_SEED,
    replicate_seeds,
)
from tests.conftest import EXPERIMENTS, ROOT, SPEC


@pytest.fixture
def seeds_run(monkeypatch):
    """Every (episodes, seed) the SimPy engine ran, through the studies' evaluators."""
    seen: list[tuple[int, int]] = []
    real = search.executor_evaluate

    def recording(*args, **kwargs):
        evaluate = real(*args, **kwargs)

        def wrapped(params, episodes, seed):
            seen.append((episodes, seed))
            return evaluate(params, episodes, seed)

        return wrapped

    monkeypatch.setattr(tune_module, "executor_evaluate", recording)
    monkeypatch.setattr(shootout_pool, "executor_evaluate", recording)  # the shoot-out's
    return seen


def test_every_study_and_its_budget_and_result_are_in_the_api():
    for name in ("tune", "shootout", "refit", "claims"):
        assert name in api.__all__ and callable(getattr(api, name))
    for name in ("TuneBudget", "ShootoutBudget", "RefitBudget", "ClaimsBudget"):
        assert name in api.__all__
        with pytest.raises(AttributeError):  # frozen: a budget is a value
            getattr(api, name)().trials = 3  # type: ignore[misc]
    assert {"TuneResult", "ShootoutResult", "RefitResult", "ClaimsResult"} <= set(api.__all__)
    assert api.ShootoutBudget().seeds == replicate_seeds(5)
    assert api.ShootoutBudget().seeds[0][0] == TUNING_SEED
    assert api.ShootoutBudget().holdout_seed == RELEASE_HOLDOUT_SEED


def test_tune_screens_on_batch_confirms_on_simpy_and_holds_out_on_the_ledger_seed(
    tmp_path, seeds_run
):
    spec = load_spec(EXPERIMENTS / "tune_pid.toml")
    budget = api.TuneBudget(trials=2, train_episodes=6, holdout_episodes=8, replicates=2)
    out = tmp_path / "tune"
    result = api.tune(spec, budget, engine="batch", finalists=2, out=out)
    assert isinstance(result, StudyResult) and isinstance(result, api.TuneResult)
    assert [len(r.trials) for r in result.replicates] == [2, 2]
    # each replicate's finalists re-scored on its own training seed (SimPy) ...
    (first, _), (second, _) = replicate_seeds(2)
    counts = [len(r.finalists) for r in result.replicates]
    assert seeds_run[: sum(counts)] == [(6, first)] * counts[0] + [(6, second)] * counts[1]
    rest = seeds_run[sum(counts) :]
    # ... then the race on the confirmation seed, then every arm on the release hold-out
    arms = len(result.holdout)
    assert rest[-arms:] == [(8, RELEASE_HOLDOUT_SEED)] * arms
    assert {seed for _, seed in rest[:-arms]} == {CONFIRM_SEED}
    table = result.table()
    assert table.columns == ["", "value"]
    assert table.rows[0] == ["verdict", result.to_dict()["recommendation"]["verdict"]]
    data = result.to_dict()
    assert data["protocol"]["train_seeds"] == [first, second]
    assert data["protocol"]["confirm_seed"] == CONFIRM_SEED
    assert data["protocol"]["holdout_seed"] == RELEASE_HOLDOUT_SEED
    assert data["holdout"]["default_score"] == result.holdout[0].objective
    # with out: the files the command writes, tune.json being to_dict()
    assert json.loads((out / "tune.json").read_text()) == json.loads(json.dumps(data))
    assert len((out / "trials.jsonl").read_text().splitlines()) == 4
    setup = json.loads((out / "tune_setup.json").read_text())
    assert setup["tune"]["holdout_seed"] == RELEASE_HOLDOUT_SEED and setup["replicates"] == 2


def test_tune_refuses_a_spec_without_a_tune_table():
    with pytest.raises(SpecError, match="no \\[tune\\] table"):
        api.tune(SPEC, api.TuneBudget(trials=1))


def test_shootout_ranks_two_contenders_on_the_ledger_seeds(seeds_run):
    budget = api.ShootoutBudget(trials_per_dim=1, train_episodes=6, holdout_episodes=10)
    budget = replace(budget, replicates=2)
    result = api.shootout(
        SPEC, budget, controllers=["pid", "threshold"], engine="batch", finalists=1
    )
    assert isinstance(result, StudyResult) and isinstance(result, api.ShootoutResult)
    # per law: each replicate's finalist on its own training seed and its best held out,
    # then the law's shipped defaults held out
    (first, _), (second, _) = replicate_seeds(2)
    per_law = [(6, first), (10, RELEASE_HOLDOUT_SEED), (6, second), (10, RELEASE_HOLDOUT_SEED)]
    assert seeds_run == [*per_law, (10, RELEASE_HOLDOUT_SEED)] * 2
    table = result.table()
    assert table.columns[:3] == ["rank", "law", "success % mean (sd)"]
    assert len(table.rows) == 2
    data = result.to_dict()
    protocol = data["protocol"]
    assert protocol["train_seeds"] == [first, second] and protocol["sampler_seeds"] == [0, 1]
    assert protocol["holdout_seed"] == RELEASE_HOLDOUT_SEED
    assert protocol["engine"] == {"trials": "batch", "finalists": 1, "holdout": "simpy"}
    assert protocol["trials_per_dim"] == 1 and protocol["holdout_episodes"] == 10
    names = [law["name"] for law in data["laws"]]
    assert sorted(names) == ["pid", "threshold"]
    for row, law in zip(table.rows, data["laws"], strict=True):
        assert row[0].lstrip("=") == str(law["rank"])
        assert row[1].split()[0] == law["name"]
        assert row[2].startswith(f"{100 * law['holdout_success']['mean']:.1f} (")
        assert law["trials_engine"] == "batch" and law["defaults"]["episodes"] == 10
        assert len(law["tuned_params"]) == 2
        assert law["trials_per_replicate"] == law["dimension"]  # 1 × d
    pid = next(law for law in data["laws"] if law["name"] == "pid")
    assert pid["dimension"] == 8  # seven gains and the shared confirm
    params = result.params_table()
    assert [r[1] for r in params.rows] == ["r0", "r1"] * 2
    json.dumps(data)  # what the command writes: plain JSON


def test_shootout_needs_two_known_contenders():
    with pytest.raises(SpecError, match="unknown controller"):
        api.shootout(SPEC, api.ShootoutBudget(trials_per_dim=1), controllers=["pid", "nope"])
    with pytest.raises(SpecError, match="fewer than two"):
        api.shootout(SPEC, api.ShootoutBudget(trials_per_dim=1), controllers=["pid"])


def test_refit_records_the_fit_on_the_tuning_seed_and_checks_it_held_out(monkeypatch):
    monkeypatch.chdir(ROOT)  # the record names the tasks' specs relative to the repository
    budget = api.RefitBudget(trials=1, train_episodes=4, holdout_episodes=5)
    result = api.refit(budget=budget, controllers=["threshold"])
    assert isinstance(result, StudyResult) and isinstance(result, api.RefitResult)
    data = result.to_dict()
    protocol = data["protocol"]
    assert protocol["tuning_seed"] == TUNING_SEED and protocol["holdout_seed"] == HOLDOUT_SEED
    assert protocol["specs"] == [
        "experiments/flight_booking.toml",
        "experiments/research_qa_faults.toml",
    ]
    assert protocol["trials"] == 1 and protocol["train_episodes_per_task"] == 4
    (fit,) = data["controllers"]
    assert fit["name"] == "threshold"
    assert fit["fitted"] == fit["previous"]  # one trial: the previous defaults, enqueued first
    assert fit["holdout"]["episodes"] == 10  # 5 per task, two tasks, paired
    table = result.table()
    assert table.columns[0] == "controller" and [r[0] for r in table.rows] == ["threshold"]
    row = table.rows[0]
    assert row[3] == (
        f"{fit['train_objective']['previous']:.4f} → {fit['train_objective']['fitted']:.4f}"
    )
    assert row[5] == f"{fit['holdout']['only_fitted']}/{fit['holdout']['only_previous']}"
    assert row[6] == f"{fit['holdout']['p_mcnemar']:.3f}"


def test_refit_refuses_a_controller_without_a_space():
    with pytest.raises(SpecError, match="choose among"):
        api.refit(budget=api.RefitBudget(trials=1), controllers=["oracle"])


def test_claims_run_on_the_quick_seeds_into_a_scratch_directory():
    budget = api.ClaimsBudget(seeds=QUICK_SEEDS, episodes=8)
    result = api.claims(["pid_success", "pid_beats_threshold"], budget, root=ROOT)
    assert isinstance(result, StudyResult) and isinstance(result, api.ClaimsResult)
    table = result.table()
    assert table.columns == ["id", "claim", "value", "95% CI", "p", "Holm p", "verdict"]
    assert [r[0] for r in table.rows] == ["pid_success", "pid_beats_threshold"]
    assert table.title.startswith(f"claims: spec seeds {QUICK_SEEDS[0]}, 8 episodes each")
    data = result.to_dict()
    assert data["seeds"] == list(QUICK_SEEDS) and data["episodes_per_seed"] == 8
    by_id = {c["id"]: c for c in data["claims"]}
    assert by_id["pid_success"]["n"] == 8
    assert table.rows[0][2] == f"{100 * by_id['pid_success']['value']:.1f} %"
    assert data["holm_family"] == 2
    for row, claim in zip(table.rows, data["claims"], strict=True):
        assert row[6] == claim["verdict"]
        assert row[5] == f"{claim['p_holm']:.2g}"
        assert claim["ci95"][0] <= claim["value"] <= claim["ci95"][1]


def test_claims_refuse_an_unknown_id():
    with pytest.raises(SpecError, match="unknown claim"):
        api.claims(["nope"])


def test_a_sweep_result_is_a_study_result(tmp_path):
    from opar_sim.running.executors import SerialExecutor

    spec = with_overrides(load_spec(EXPERIMENTS / "pid_gain_map.toml"), episodes=2)
    result = run_sweep(spec, tmp_path / "sweep", executor=SerialExecutor(), parallelism=1)
    assert isinstance(result, StudyResult)
    table = result.table()
    assert table.columns[:3] == ["kp", "kd", "controller"]
    data = result.to_dict()
    assert len(table.rows) == len(data["points"]) == 25  # one controller per point
    saved = json.loads((tmp_path / "sweep" / "sweep_summary.json").read_text())
    assert saved == data["points"]
    first = data["points"][0]["summary"]["pid"]
    assert table.rows[0][3] == f"{first['success_rate']:.1%}"


def test_the_claims_recheck_runs_from_python_with_a_cap():
    result = api.recheck(["pid_success", "pid_beats_threshold"], cap=40, root=ROOT)
    assert isinstance(result, StudyResult) and isinstance(result, api.RecheckResult)
    rows = {r.claim.id: r for r in result.rows}
    assert rows["pid_beats_threshold"].plan.capped and rows["pid_beats_threshold"].power < 0.2
    assert result.table().rows[0][0] == "pid_success"
    assert result.to_dict()["cap"] == 40
