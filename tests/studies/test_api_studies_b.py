"""The studies of ``opar_sim.api`` (ablation, sprt, detectors, relay, memory), advise and calibrate.

Each is called from Python with a tiny budget, as a notebook would, and its result is
checked against itself: the table the command prints and the dict it writes say the same
thing, on the seeds the ledger (``opar_sim.studies.seeds``) names.  The commands that
render them stay thin: no ``run`` is over 40 lines.
"""

from __future__ import annotations

import ast
import json
import math
import tomllib
from pathlib import Path

import pytest

from opar_sim import api
from opar_sim.core.detectors import DETECTORS
from opar_sim.spec.edit import with_overrides
from opar_sim.spec.schema import SpecError
from opar_sim.studies.detectors import THRESHOLDS
from opar_sim.studies.result import StudyResult
from opar_sim.studies.seeds import HOLDOUT_SEED, TUNING_SEED
from tests.conftest import EXPERIMENTS, ROOT, SPEC


def _spec(name: str):
    return api.spec_of(EXPERIMENTS / name)


def test_ablation_pairs_every_arm_against_the_reference_on_the_holdout_seed():
    result = api.ablation(api.spec_of(SPEC), api.AblationBudget(episodes=8))
    assert isinstance(result, StudyResult)
    data, table = result.to_dict(), result.table()
    assert data["protocol"]["holdout_seed"] == HOLDOUT_SEED == result.seed
    assert data["protocol"]["episodes"] == 8
    assert table.columns[:4] == ["arm", "kp", "ki", "kd"]
    assert [row[0] for row in table.rows] == [
        a["arm"] + (" (reference)" if k == 0 else "") for k, a in enumerate(data["arms"])
    ]
    assert data["protocol"]["reference"] == data["arms"][0]["arm"]
    for row, arm in zip(table.rows, data["arms"], strict=True):
        assert row[4].startswith(f"{arm['success']:.1%} [")
        assert row[9] == f"{arm['mean_tokens']:.0f}"
    reference = data["arms"][0]
    assert reference["success_diff"] == 0 and reference["p_holm"] == 1.0
    assert table.rows[0][5] == ""  # the reference has no difference to itself
    assert {a["variant"] for a in data["arms"]} >= {"PID", "PI", "PD", "P", "I"}
    assert str(HOLDOUT_SEED) in table.notes[0]


def test_ablation_runs_a_chosen_plan_only():
    spec = api.spec_of(SPEC)
    from opar_sim.studies.ablation import ablation_arms

    plan = ablation_arms(spec)[:2]
    result = api.ablation(spec, api.AblationBudget(episodes=5), plan=plan, seed=3)
    assert [r.arm for r in result.arms] == plan
    assert result.to_dict()["protocol"]["holdout_seed"] == 3


def test_sprt_study_calibrates_on_tuning_and_measures_on_holdout():
    result = api.sprt_study(
        api.spec_of(SPEC), api.SPRTBudget(episodes=20, calibration=100), shift=0.1
    )
    assert isinstance(result, StudyResult)
    data, table = result.to_dict(), result.table()
    assert data["calibration"]["seed"] == TUNING_SEED
    assert data["calibration"]["episodes"] == 100
    assert data["evaluation_seed"] == HOLDOUT_SEED
    assert data["spec"] == "flight_booking"  # no source given: the spec's name
    labels = [a["label"] for a in data["agents"]]
    assert [row[0] for row in table.rows] == labels
    assert labels[0].startswith("calibrated") and "−0.1" in labels[1] and "+0.1" in labels[2]
    assert set(data["curves"]) == set(labels)
    for row, agent in zip(table.rows, data["agents"], strict=True):
        assert agent["episodes"] == 20
        assert row[1] == f"{agent['success']:.1%}"
        assert row[5] == ("yes" if agent["max_upper"] <= 0.05 else "NO")
    assert table.columns[5] == "≤ β=0.05"
    assert f"{data['threshold_success']:.1%}" in table.notes[2]
    json.dumps(data)  # the file the command writes


def test_sprt_study_takes_given_parameters_and_refuses_an_llm_agent():
    spec = api.spec_of(SPEC)
    first = api.sprt_study(spec, api.SPRTBudget(episodes=10, calibration=100))
    again = api.sprt_study(
        spec, api.SPRTBudget(episodes=10, calibration=100), params=first.calibration.params
    )
    assert again.calibration.feasible_episodes == 0  # no calibration ran
    assert again.to_dict()["agents"] == first.to_dict()["agents"]
    with pytest.raises(SpecError, match="simulated"):
        api.sprt_study(with_overrides(spec, agent="llm"), api.SPRTBudget(10, 100))


def test_detectors_choose_on_the_tuning_seed_and_report_the_evaluation_seed():
    spec = _spec("detectors_research_qa.toml")
    result = api.detectors(spec, api.DetectorsBudget(episodes=10), k=2)
    assert isinstance(result, StudyResult)
    data, table = result.to_dict(), result.table()
    assert data["tuning_seed"] == TUNING_SEED != data["seed"] == spec.seed
    assert data["episodes"] == 10 and data["k"] == 2
    assert set(data["detectors"]) == {cls.name for cls in DETECTORS}
    for name, rows in data["detectors"].items():
        assert [r["threshold"] for r in rows] == list(THRESHOLDS[name])
        assert data["chosen_on_tuning"][name] in THRESHOLDS[name]
    assert {row[0] for row in table.rows} == set(data["detectors"])
    for row in table.rows:
        score = next(s for s in data["detectors"][row[0]] if f"{s['threshold']:g}" == row[1])
        assert row[3] == str(score["alarms"]) and row[7] == f"{score['f1']:.3f}"
        if "tuned" in row[2]:
            assert data["chosen_on_tuning"][row[0]] == score["threshold"]
    best = data["best"]
    assert best["detector"] in data["detectors"] and f"F1 {best['f1']:.3f}" in table.notes[-1]
    with pytest.raises(SpecError, match=f"seed {TUNING_SEED}"):
        api.detectors(with_overrides(spec, seed=TUNING_SEED), api.DetectorsBudget(episodes=2))


def test_relay_tunes_against_the_classic_rules_on_holdout_seeds():
    notes: list[str] = []
    result = api.relay(
        _spec("plant_relay.toml"),
        api.RelayBudget(trials=3, holdout=3, train_episodes=3),
        note=notes.append,
    )
    assert isinstance(result, StudyResult)
    data, table = result.to_dict(), result.table()
    assert notes == [notes[0]] and notes[0].startswith("relay test: K_u = ")
    assert data["relay"]["ultimate_gain"] > 0 and "outputs" not in data["relay"]
    names = [c["name"] for c in data["contenders"]]
    assert names == ["ziegler_nichols", "tyreus_luyben", "tuned"]
    assert [row[0] for row in table.rows] == names
    assert table.title.endswith("IAE on 3 held-out episodes")
    for row, c in zip(table.rows, data["contenders"], strict=True):
        assert row[4] == f"{c['holdout_iae']:.3f}"
        assert (row[5] == "") == (c["name"] == "tuned")
    best = min(data["contenders"], key=lambda c: c["holdout_iae"])
    gains = tomllib.loads(result.gains_toml())["controller"]["params"]
    assert gains == pytest.approx(best["gains"], rel=1e-5)
    assert set(result.responses()) == set(names)
    with pytest.raises(SpecError, match="needs task `plant`"):
        api.relay(api.spec_of(SPEC), api.RelayBudget(trials=2, holdout=1))


def test_rebound_writes_both_arms_and_its_json(tmp_path: Path):
    seen: list[tuple[str, int | None]] = []

    def stage(label, total):
        seen.append((label, total))
        from opar_sim.running.stages import no_stage

        return no_stage(label, total)

    spec = _spec("context_rebound.toml")
    result = api.rebound(spec, api.MemoryBudget(episodes=6), out=tmp_path, stage=stage)
    assert isinstance(result, StudyResult)
    data, table = result.to_dict(), result.table()
    assert seen == [("study rebound", 2 * 6 * len(spec.controller_list()))]
    assert json.loads((tmp_path / "rebound.json").read_text()) == data
    assert [row[0] for row in table.rows] == list(data) and len(data) == 2
    assert "rebound" in table.columns and "success rate" in table.columns
    column = table.columns.index("rebound")
    for row, numbers in zip(table.rows, data.values(), strict=True):
        assert row[column] == f"{numbers['rebound']:.4g}"
        assert len(numbers["error_by_step"]) == len(result.curves[row[0]])
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_dir()) == [
        "context_rebound-compressed",
        "context_rebound-plain",
    ]


def test_learning_gives_a_curve_per_arm(tmp_path: Path):
    spec = _spec("reflexion.toml")
    result = api.learning(spec, api.MemoryBudget(episodes=4), out=tmp_path)
    data, table = result.to_dict(), result.table()
    attempts = spec.reflexion.attempts
    assert json.loads((tmp_path / "learning.json").read_text()) == data
    assert [row[0] for row in table.rows] == list(data)
    for row, numbers in zip(table.rows, data.values(), strict=True):
        curve = numbers["success_by_attempt"]
        assert len(curve) == attempts and curve == sorted(curve)  # solved by attempt k
        assert row[1 : 1 + attempts] == [f"{v:.4g}" for v in curve]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("record") / "run"
    api.run(SPEC, episodes=20, seed=5, out=out, figures=False)
    return out


def test_advise_tables_agree_with_its_json(recorded: Path):
    advice = api.advise(recorded, share=0.9)
    assert isinstance(advice, StudyResult)
    data = advice.to_dict()
    assert data["runs"] == 20 and data["share"] == 0.9
    assert [t.title for t in advice.tables()] == [
        "steps caps",
        "calls caps",
        "tokens caps",
        "smallest caps keeping 90% of the successes",
        f"restart at a cutoff vs continue (budget {data['restarts']['budget']} turns)",
    ]
    smallest = advice.table()
    for row in smallest.rows:
        caps = data[row[0]]
        best = next(c for c in caps if c["kept_share"]["mean"] >= 0.9 - 1e-12)
        assert row[1] == str(best["cap"])
    steps = advice.cap_table("steps")
    assert len(steps.rows) == len(data["steps"])  # a short table shows every cap
    assert advice.restart_table().notes[-1] == data["restarts"]["verdict"]
    with pytest.raises(SpecError):
        api.advise(recorded / "missing")


def test_calibrate_fits_a_record_and_checks_it_on_held_out_folds(recorded: Path):
    lines: list[str] = []
    report = api.calibrate(
        recorded,
        api.CalibrationBudget(folds=2, cell_episodes=8, episodes=20),
        homogeneous=True,
        note=lines.append,
    )
    assert isinstance(report, StudyResult)
    data, table = report.to_dict(), report.table()
    assert data["check"]["in_sample"] is True and len(lines) == 2
    assert lines[0].startswith("recorded (20 episodes)")
    assert set(data) >= {"params", "evidence", "model", "model_task", "validation"}
    labels = [row[0] for row in table.rows]
    assert len(labels) == 2 + 2  # two folds, pooled, in sample
    assert table.rows[-1][-1] == "not a validation"
    assert report.verdict().startswith(("fits", "does NOT fit"))
    assert "[agent" in report.snippet
    assert tomllib.loads(report.snippet)  # a valid TOML section to paste
    e = report.validation.effect
    assert e.slope == 0 and e.sd == 0  # homogeneous
    assert not math.isnan(e.mean)


COMMANDS = ("ablate", "sprt", "detectors", "relay", "study", "advise", "calibrate")


@pytest.mark.parametrize("name", COMMANDS)
def test_the_command_is_thin(name: str):
    path = ROOT / "opar_sim" / "cli" / "commands" / f"{name}_cmd.py"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    run = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "run")
    assert run.end_lineno is not None and run.end_lineno - run.lineno + 1 <= 40
