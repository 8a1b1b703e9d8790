"""The re-fit of every controller's defaults: rounding, pooling, the record the signatures match."""

from __future__ import annotations

import json

import pytest

from controllers.registry import CONTROLLERS
from opar_sim.cli.main import main
from opar_sim.spec.schema import ParamRange
from opar_sim.studies.refit import (
    RECORD,
    SPECS,
    TUNING_SEED,
    pooled,
    rounded,
    shipped_defaults,
    significant,
)
from opar_sim.studies.seeds import HOLDOUT_SEED
from tests.conftest import ROOT


@pytest.mark.parametrize(
    ("value", "expected"),
    [(0.03456, 0.035), (1.149, 1.1), (12.6, 13.0), (0.0, 0.0), (-0.0456, -0.046), (987.0, 990.0)],
)
def test_significant_keeps_two_digits(value, expected):
    assert significant(value) == expected


def test_rounded_keeps_integers_and_clips_to_the_space():
    space = {
        "a": ParamRange(low=1, high=3, integer=True),
        "b": ParamRange(low=0.5, high=0.99),
    }
    assert rounded({"a": 2.4, "b": 0.9949}, space) == {"a": 2, "b": 0.99}
    assert rounded({"a": 2.6, "b": 0.5012}, space) == {"a": 3, "b": 0.5}


def test_shipped_defaults_are_the_signature_defaults_of_the_space():
    from controllers.threshold import ThresholdReflector

    got = shipped_defaults(ThresholdReflector)
    assert set(got) == {f"controller.params.{k}" for k in ThresholdReflector.SPACE}
    law = ThresholdReflector()
    assert got["controller.params.threshold_complete"] == law.threshold_complete


def test_pooled_runs_every_spec_on_the_same_episodes_and_tags_them():
    calls = []

    def one(tag):
        def evaluate(params, episodes, seed):
            calls.append((tag, dict(params or {}), episodes, seed))
            return [{"episode": e, "tag": tag} for e in range(episodes)]

        return evaluate

    rows = pooled([one("a"), one("b")])({"x": 1.0}, 3, 7)
    assert [(r["spec"], r["episode"], r["tag"]) for r in rows] == [
        (0, 0, "a"),
        (0, 1, "a"),
        (0, 2, "a"),
        (1, 0, "b"),
        (1, 1, "b"),
        (1, 2, "b"),
    ]
    assert calls == [("a", {"x": 1.0}, 3, 7), ("b", {"x": 1.0}, 3, 7)]


def test_refit_command_runs_a_tiny_budget_and_writes_its_record(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    out = tmp_path / "fit.json"
    code = main(
        [
            "refit",
            "--controllers",
            "threshold",
            "--trials",
            "2",
            "--train-episodes",
            "6",
            "--holdout-episodes",
            "6",
            "--workers",
            "1",
            "--write",
            str(out),
        ]
    )
    assert code == 0
    record = json.loads(out.read_text())
    assert record["protocol"]["tuning_seed"] == TUNING_SEED == 100
    assert record["protocol"]["holdout_seed"] == HOLDOUT_SEED
    assert record["protocol"]["specs"] == list(SPECS)
    (entry,) = record["controllers"]
    assert entry["name"] == "threshold"
    # the previous defaults are the first trial, so they are on record as the starting point
    assert entry["previous"] == shipped_defaults(CONTROLLERS.factories["threshold"])
    assert entry["holdout"]["episodes"] == 12  # 6 per task, both tasks


def test_unknown_controller_for_refit_is_a_usage_error(capsys):
    assert main(["refit", "--controllers", "nope"]) == 2
    assert "choose among" in capsys.readouterr().err


def test_the_shipped_defaults_are_the_recorded_fit():
    record = json.loads((ROOT / RECORD).read_text())
    assert record["protocol"]["tuning_seed"] == TUNING_SEED
    for entry in record["controllers"]:
        factory = CONTROLLERS.factories[entry["name"]]
        assert shipped_defaults(factory) == entry["fitted"], entry["name"]
