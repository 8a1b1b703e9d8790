"""The Python API: the same run directory as the CLI, read back; a user's controller from a file."""

from __future__ import annotations

import json
import textwrap

import pytest

import opar_sim
from opar_sim.cli.main import main
from opar_sim.rundir import RunDirError
from opar_sim.spec.schema import SpecError
from tests.conftest import SPEC

PATIENT = textwrap.dedent(
    """
    from opar_sim import ControlSignal, Decision


    class Patient:
        \"\"\"Stop only when very sure; never replan.\"\"\"

        name = "patient"

        def __init__(self, sure: float = 0.97) -> None:
            self.sure = sure

        def reset(self) -> None: ...

        def decide(self, evaluation, ctx) -> Decision:
            if evaluation.delta_task >= self.sure:
                return Decision(ControlSignal.TERMINATE, "very sure", {})
            return Decision(ControlSignal.CONTINUE, "keep going", {})
    """
)


def test_run_writes_the_same_bytes_as_the_cli(tmp_path):
    api = opar_sim.run(SPEC, episodes=15, seed=3, out=tmp_path / "api", figures=False)
    assert (
        main(["run", SPEC, "--episodes", "15", "--seed", "3", "--out", str(tmp_path / "cli")]) == 0
    )
    for name in ("spec.json", "episodes.jsonl", "steps.jsonl", "summary.json"):
        assert (api.path / name).read_bytes() == (tmp_path / "cli" / name).read_bytes(), name
    assert api.summary == json.loads((tmp_path / "cli" / "summary.json").read_text())
    assert api.controllers == ["pid"] and api.spec is not None and api.spec.seed == 3
    assert not (api.path / "progress.png").exists()  # figures=False


def test_load_run_reads_back_what_run_wrote(tmp_path):
    run = opar_sim.run(SPEC, episodes=10, out=tmp_path / "r")
    assert (run.path / "progress.png").is_file()
    again = opar_sim.load_run(str(tmp_path / "r"))
    assert again.summary == run.summary and again.spec == run.spec
    rows = list(again.episodes())
    assert [r["episode"] for r in rows] == list(range(10))
    assert sum(r["steps"] for r in rows) == sum(1 for _ in again.steps())
    metrics = again.analysis().controllers["pid"]
    assert metrics.episodes == 10
    assert metrics.success.rate == run.summary["pid"]["success_rate"]


def test_specs_as_mapping_and_toml_text_are_the_same_spec(tmp_path):
    data = {"name": "w", "episodes": 5, "task": {"name": "weather"}}
    text = 'name = "w"\nepisodes = 5\n[task]\nname = "weather"\n'
    a = opar_sim.run(data, out=tmp_path / "a", figures=False)
    b = opar_sim.run(text, out=tmp_path / "b", figures=False)
    assert (a.path / "episodes.jsonl").read_bytes() == (b.path / "episodes.jsonl").read_bytes()


def test_compare_pairs_controllers_and_writes_metrics(tmp_path):
    run = opar_sim.compare(
        SPEC, ["pid", "threshold"], episodes=12, out=tmp_path / "c", figures=False
    )
    assert run.controllers == ["pid", "threshold"]
    metrics = json.loads((run.path / "metrics.json").read_text())
    assert set(metrics) == {"pid", "threshold"}
    assert metrics["threshold"]["success_rate"] == run.summary["threshold"]["success_rate"]
    with pytest.raises(SpecError, match="at least one"):
        opar_sim.compare(SPEC, [], out=tmp_path / "none")


def test_bad_input_raises_spec_errors(tmp_path):
    with pytest.raises(SpecError, match="spec not found"):
        opar_sim.run(tmp_path / "missing.toml")
    with pytest.raises(SpecError, match="kdd"):
        opar_sim.run({"name": "x", "controller": {"name": "pid", "params": {"kdd": 1}}})
    opar_sim.run(SPEC, episodes=2, out=tmp_path / "once", figures=False)
    with pytest.raises(SpecError, match="already holds a run"):
        opar_sim.run(SPEC, episodes=2, out=tmp_path / "once", figures=False)
    with pytest.raises(RunDirError, match="not found"):
        opar_sim.load_run(tmp_path / "nothing")


def test_a_controller_from_a_file_runs_on_every_executor(tmp_path, monkeypatch):
    (tmp_path / "laws").mkdir()
    (tmp_path / "laws" / "patient.py").write_text(PATIENT)
    monkeypatch.chdir(tmp_path)
    ref = "laws/patient.py:Patient"
    serial = opar_sim.run(SPEC, controller=ref, episodes=12, out="serial", figures=False)
    pooled = opar_sim.run(SPEC, controller=ref, episodes=12, out="pool", workers=2, figures=False)
    assert serial.controllers == [ref]
    rows = [json.loads(line) for line in (serial.path / "episodes.jsonl").read_text().splitlines()]
    assert {r["controller"] for r in rows} == {ref}
    assert serial.summary[ref]["mean_replans"] == 0.0  # it never replans
    assert (serial.path / "episodes.jsonl").read_bytes() == (
        pooled.path / "episodes.jsonl"
    ).read_bytes()
    # its parameters go through the spec like a registered controller's
    strict = opar_sim.run(
        {"name": "p", "episodes": 12, "controller": {"name": ref, "params": {"sure": 2.0}}},
        out="strict",
        figures=False,
    )
    assert strict.summary[ref]["outcomes"].get("success", 0) == 0  # δ_task never reaches 2


def test_controller_file_flag_on_run_and_compare(tmp_path, monkeypatch, capsys):
    (tmp_path / "patient.py").write_text(PATIENT)
    monkeypatch.chdir(tmp_path)
    assert (
        main(["run", SPEC, "--controller", "patient.py:Patient", "--episodes", "6", "--out", "r"])
        == 0
    )
    assert "patient.py:Patient" in json.loads((tmp_path / "r" / "summary.json").read_text())
    assert (
        main(
            [
                "compare",
                SPEC,
                "--controllers",
                "pid,patient.py:Patient",
                "--episodes",
                "6",
                "--out",
                "c",
                "--workers",
                "1",
            ]
        )
        == 0
    )
    assert set(json.loads((tmp_path / "c" / "metrics.json").read_text())) == {
        "pid",
        "patient.py:Patient",
    }


@pytest.mark.parametrize(
    ("ref", "message"),
    [
        ("missing.py:Patient", "file not found: missing.py"),
        (
            "patient.py:Nope",
            "no 'Nope' in patient.py (classes there: ControlSignal, Decision, Patient)",
        ),
        ("broken.py:Law", "importing broken.py failed: ZeroDivisionError"),
        ("notalaw.py:Law", "Law is not a controller: it needs reset() and decide"),
    ],
)
def test_a_bad_controller_reference_exits_2_in_one_line(
    tmp_path, monkeypatch, capsys, ref, message
):
    (tmp_path / "patient.py").write_text(PATIENT)
    (tmp_path / "broken.py").write_text("x = 1 / 0\n")
    (tmp_path / "notalaw.py").write_text("class Law:\n    name = 'law'\n")
    monkeypatch.chdir(tmp_path)
    assert main(["run", SPEC, "--controller", ref, "--episodes", "2", "--out", "r"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err, err
    assert not (tmp_path / "r").exists()
