"""Gain tuning: the objective, one replicate's search, the finalists, and the command."""

from __future__ import annotations

import json
import tomllib

import pytest

from opar_sim.cli.main import main
from opar_sim.running.search import paired_bootstrap
from opar_sim.spec.build import parse_spec
from opar_sim.spec.schema import Objective, ParamRange, SpecError, TuneSpec
from opar_sim.studies.gains import search_replicate, toml_snippet


def row(success: bool, tokens: int = 0, replans: int = 0, steps: int = 10, episode: int = 0):
    return {
        "success": success,
        "tokens": tokens,
        "replans": replans,
        "steps": steps,
        "episode": episode,
    }


def test_episode_objective_is_the_weighted_sum():
    objective = Objective(failure=1.0, tokens=1e-5, replan_rate=0.5)
    assert objective.episode_score(row(True, 20_000, 2, 10)) == pytest.approx(0.2 + 0.1)
    assert objective.episode_score(row(False, 0, 0, 10)) == 1.0


def test_paired_bootstrap_brackets_a_constant_difference():
    assert paired_bootstrap([1.0, 2.0, 3.0], [0.5, 1.5, 2.5], seed=0) == (0.5, 0.5)


def test_a_replicate_finds_the_minimum_on_its_training_seed_only():
    space = {"controller.params.kp": ParamRange(low=0.1, high=10.0, log=True)}
    spec = TuneSpec(trials=30, train_episodes=20, holdout_episodes=50, space=space)
    seen_seeds = set()

    def evaluate(params, episodes, seed):
        seen_seeds.add(seed)
        kp = 1.0 if params is None else params["controller.params.kp"]
        # success iff kp is within a band around 3 (deterministic, per episode)
        return [row(abs(kp - 3.0) < 0.3 * (1 + i % 3), episode=i) for i in range(episodes)]

    result = search_replicate(spec, evaluate, train_seed=7, sampler_seed=2, index=4)
    assert abs(result.best_params["controller.params.kp"] - 3.0) < 0.9
    assert seen_seeds == {7}  # a replicate never touches the race's or the hold-out's seeds
    assert (result.index, result.train_seed, result.sampler_seed) == (4, 7, 2)
    assert len(result.trials) == 30
    assert result.best_train_score == min(t.score for t in result.trials)


def test_toml_snippet_round_trips():
    text = toml_snippet({"controller.params.kp": 0.5, "controller.params.kd": 12.0})
    assert tomllib.loads(text) == {"controller": {"params": {"kp": 0.5, "kd": 12.0}}}


def test_bad_tune_tables_are_rejected_naming_the_key():
    with pytest.raises(SpecError, match="space"):
        parse_spec({"name": "t", "tune": {"space": {}}})
    with pytest.raises(SpecError, match="low < high"):
        parse_spec({"name": "t", "tune": {"space": {"a.b": {"low": 2, "high": 1}}}})


TUNE = """
name = "mini_tune"
[task]
name = "weather"
[controller]
name = "threshold"
[limits]
max_steps = 6
[tune]
trials = 4
train_episodes = 12
holdout_episodes = 20
[tune.space]
"controller.params.threshold_complete" = {{ low = 0.5, high = {high} }}
"controller.params.threshold_valid" = {{ low = 0.0, high = 0.5 }}
"""


def test_tune_command_writes_gains_history_and_scores(tmp_path, capsys):
    spec = tmp_path / "t.toml"
    spec.write_text(TUNE.format(high=0.99))
    out = tmp_path / "out"
    assert main(["tune", str(spec), "--workers", "1", "--out", str(out)]) == 0
    summary = json.loads((out / "tune.json").read_text())
    assert set(summary["best_params"]) == {
        "controller.params.threshold_complete",
        "controller.params.threshold_valid",
    }
    assert "improvement_ci95" in summary["holdout"]
    assert len(summary["replicates"]) == 5  # the default
    trials = [json.loads(line) for line in (out / "trials.jsonl").read_text().splitlines()]
    assert [t["replicate"] for t in trials] == [r for r in range(5) for _ in range(4)]
    for name in ("best.toml", "history.png", "landscape.png"):
        assert (out / name).is_file(), name
    for r in range(5):
        assert (out / f"replicate_{r}" / "optuna.journal").is_file()
    printed = capsys.readouterr().out
    assert "recommendation" in printed and summary["recommendation"]["verdict"] in printed
    best = (out / "best.toml").read_text()
    assert best.startswith("# ") and tomllib.loads(best)["controller"]["params"]


def test_a_space_outside_the_valid_range_is_rejected_before_running(tmp_path, capsys):
    spec = tmp_path / "t.toml"
    spec.write_text(TUNE.format(high=1.5))
    out = tmp_path / "out"
    assert main(["tune", str(spec), "--workers", "1", "--out", str(out)]) == 2
    assert "threshold_complete must be in [0, 1]" in capsys.readouterr().err
    assert not (out / "tune.json").exists()


def test_screening_engine_picks_finalists_and_the_reference_decides():
    """Screened by one evaluation, the top k re-scored by another: the reference's best wins."""
    space = {"controller.params.kp": ParamRange(low=0.0, high=10.0)}
    spec = TuneSpec(trials=12, train_episodes=10, holdout_episodes=8, space=space)
    calls = []

    def screen(params, episodes, seed):
        kp = 1.0 if params is None else params["controller.params.kp"]
        calls.append(("screen", seed))
        # the screen prefers large kp; success is deterministic in kp
        return [row(kp > 5.0, episode=i) for i in range(episodes)]

    def reference(params, episodes, seed):
        kp = 1.0 if params is None else params["controller.params.kp"]
        calls.append(("reference", seed))
        # the reference scores by distance to 7 (tokens stand in for the cost)
        return [row(True, tokens=int(1000 * abs(kp - 7.0)), episode=i) for i in range(episodes)]

    objective = Objective(failure=1.0, tokens=1e-4, replan_rate=0.0)
    spec = spec.model_copy(update={"objective": objective})
    result = search_replicate(spec, screen, 3, 3, confirm=reference, finalists=4)
    assert len(result.finalists) == 4
    screened = sorted(result.trials, key=lambda t: (t.score, t.number))[:4]
    assert [f.number for f in result.finalists] == [t.number for t in screened]
    for f, t in zip(result.finalists, screened, strict=True):
        assert f.screen_score == t.score
        kp = f.params["controller.params.kp"]
        assert f.score == pytest.approx(1e-4 * int(1000 * abs(kp - 7.0)))
    winner = min(result.finalists, key=lambda f: (f.score, f.number))
    assert result.best_params == winner.params
    assert result.best_train_score == winner.score
    # the trials ran on the screen, the finalists on the reference, all on the training seed
    assert calls.count(("screen", 3)) == 12
    assert calls.count(("reference", 3)) == 4
    assert len(calls) == 16


BATCH_TUNE = """
name = "mini_batch_tune"
[task]
name = "flight_booking"
[controller]
name = "pid"
[limits]
max_steps = 12
[tune]
trials = 3
train_episodes = 15
holdout_episodes = 15
[tune.space]
"controller.params.kp" = { low = 0.2, high = 3.0, log = true }
"""


def test_tune_engine_batch_screens_then_confirms_on_simpy(tmp_path, capsys):
    spec = tmp_path / "t.toml"
    spec.write_text(BATCH_TUNE)
    out = tmp_path / "out"
    argv = ["tune", str(spec), "--engine", "batch", "--finalists", "2", "--workers", "1"]
    assert main([*argv, "--out", str(out)]) == 0
    summary = json.loads((out / "tune.json").read_text())
    assert summary["engines"] == {"trials": "batch", "finalists": "simpy", "holdout": "simpy"}
    assert summary["protocol"]["engines"]["race"] == "simpy"
    for replicate in summary["replicates"]:
        assert len(replicate["finalists"]) == 2
        best = min(replicate["finalists"], key=lambda f: (f["score"], f["number"]))
        assert replicate["best_params"] == best["params"]
        assert replicate["best_train_score"] == best["score"]
    text = capsys.readouterr().out
    assert "screened on the batch engine" in text
    assert "re-scored on the SimPy engine" in text


def test_tune_engine_batch_refuses_what_it_cannot_screen(tmp_path, capsys):
    spec = tmp_path / "t.toml"
    # weather's twin models no wrapper: a delayed weather cannot be screened
    wrapped = TUNE.format(high=0.99).replace(
        "[controller]", '[[task.wrappers]]\nname = "delay"\n[controller]'
    )
    spec.write_text(wrapped)
    argv = ["tune", str(spec), "--engine", "batch", "--workers", "1"]
    assert main([*argv, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "--engine batch" in err and "weather's twin models no task wrappers (delay)" in err
    assert len(err.strip().splitlines()) == 1
