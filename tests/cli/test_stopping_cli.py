"""``opar-sim detectors`` and ``opar-sim sprt`` end to end, and their bad input."""

from __future__ import annotations

import json

import pytest

from opar_sim.cli.main import main
from opar_sim.studies.seeds import HOLDOUT_SEED, TUNING_SEED
from tests.conftest import SPEC

INFEASIBLE = "experiments/flight_booking_infeasible.toml"


def test_detectors_prints_the_table_and_writes_json_and_the_figure(tmp_path, capsys):
    out = tmp_path / "det"
    assert main(["detectors", SPEC, "--episodes", "15", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "stall and loop detectors" in printed and "best (F1 on tuning)" in printed
    data = json.loads((out / "detectors.json").read_text())
    assert set(data["detectors"]) == {
        "same_call", "pattern", "stall", "near_identical", "cusum", "integral"
    }  # fmt: skip
    assert data["episodes"] == 15 and data["k"] == 3
    assert (out / "precision_recall.png").stat().st_size > 0


def test_sprt_calibrates_measures_and_writes_its_files(tmp_path, capsys):
    out = tmp_path / "sprt"
    spec = "experiments/flight_booking_infeasible.toml"
    argv = ["sprt", spec, "--episodes", "60", "--calibrate", "100", "--out", str(out)]
    assert main(argv) == 0
    printed = " ".join(capsys.readouterr().out.split())
    assert "sprt: false abandons by step" in printed
    assert "tables on episodes 0..49, boundaries on 50..99" in printed
    data = json.loads((out / "sprt.json").read_text())
    assert data["calibration"]["seed"] == TUNING_SEED and data["evaluation_seed"] == HOLDOUT_SEED
    assert [a["bias"] for a in data["agents"]] == pytest.approx([0.05, -0.15, 0.25])
    assert (out / "false_abandons.png").stat().st_size > 0
    assert data["calibration"]["params"]["calibrated_task"] == "flight_booking"
    # the whole sprt.json is accepted by --params (its calibration), and skips the fit
    again = tmp_path / "again"
    given = str(out / "sprt.json")
    argv = ["sprt", spec, "--episodes", "60", "--params", given, "--out", str(again)]
    assert main(argv) == 0
    assert json.loads((again / "sprt.json").read_text())["curves"] == data["curves"]


@pytest.mark.parametrize(
    "argv",
    [
        ["sprt", "experiments/flight_booking_infeasible.toml", "--alpha", "1.5"],
        ["detectors", "experiments/nope.toml"],
        ["detectors", SPEC, "--k", "0"],
        ["sprt", INFEASIBLE, "--params", "pyproject.toml"],
        ["sprt", INFEASIBLE, "--params", "docs/defaults-fit.json"],
    ],
)
def test_bad_input_exits_2_with_one_line(argv, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err and "\n" not in err
