"""No dead ends: a killed ``traces import`` is re-run into the same ``--out``; a damaged
``spec.json`` on ``--resume`` is refused (or repaired) in one line that says what is wrong.

Issue 31's attack: a killed ``traces import`` left a directory the rerun refused, with no
``--resume`` to finish it; ``--resume`` on a run whose ``spec.json`` held the wrong types
went on and said nothing.  One test per case.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import opar_sim.rundir.writer as writer
from opar_sim.rundir import iter_episodes
from opar_sim.traces import import_traces
from tests.conftest import EXPERIMENTS
from tests.reliability.conftest import cli, tally
from tests.reliability.test_bounded_inputs import long_run, write_runs
from tests.tau_bench_data import tau_bench_file

KIND = "dead ends"
ROOT = Path(__file__).resolve().parents[2]
SPEC = EXPERIMENTS / "flight_booking.toml"


class _Killed(BaseException):
    """Stands for a SIGKILL in the middle of the import's writes."""


def _import_killed_after(monkeypatch, writes: int, source: Path, out: Path) -> None:
    real = writer.write_bytes
    done = [0]

    def dying(path, data, **kwargs):
        if done[0] == writes:
            raise _Killed
        done[0] += 1
        real(path, data, **kwargs)

    monkeypatch.setattr(writer, "write_bytes", dying)
    with pytest.raises(_Killed):
        import_traces(source, "tau-bench", out)
    monkeypatch.undo()


@pytest.mark.parametrize("writes", [0, 1, 2, 3, 4, 5])
def test_a_killed_import_is_rerun_into_the_same_out(tmp_path, capsys, monkeypatch, writes):
    out = tmp_path / "tau"
    _import_killed_after(monkeypatch, writes, tau_bench_file(), out)
    argv = ["traces", "import", tau_bench_file(), "--format", "tau-bench", "--out", out]
    status, stdout, err = cli(argv, capsys)
    assert status == 0, err
    assert "imported 140 runs" in stdout
    assert len(list(iter_episodes(out))) == 140
    status, out2, _ = cli(["replay", out, "--laws", "calls:10"], capsys)
    assert status == 0 and "58/63" in out2
    tally(KIND, inputs_tried=1, answered_cleanly=1, kills_survived=1)


def test_a_sigkilled_import_is_rerun_into_the_same_out(tmp_path, capsys):
    source = write_runs(tmp_path / "long.jsonl", [long_run(60_000)])
    out = tmp_path / "long"
    argv = ["traces", "import", str(source), "--format", "openai-chat", "--out", str(out)]
    code = "import sys; from opar_sim.cli import main; sys.exit(main(sys.argv[1:]))"
    proc = subprocess.Popen([sys.executable, "-c", code, *argv], cwd=ROOT)
    building = tmp_path / ".long.unfinished"  # where the import is written, then renamed
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None and not building.exists():
        time.sleep(0.002)
    proc.kill()
    assert proc.wait() == -signal.SIGKILL  # killed while it wrote, not after
    assert building.exists() and not out.exists()
    status, _, err = cli(argv, capsys)
    assert status == 0, err
    assert sum(1 for _ in iter_episodes(out)) == 1
    assert not [p for p in tmp_path.iterdir() if p.name not in ("long.jsonl", "long")]
    tally(KIND, inputs_tried=1, answered_cleanly=1, kills_survived=1)


def test_an_unfinished_import_is_named_by_its_readers(tmp_path, capsys, monkeypatch):
    out = tmp_path / "tau"
    _import_killed_after(monkeypatch, 3, tau_bench_file(), out)
    assert not out.exists()  # the import is built beside it and renamed at the end
    status, _, err = cli(["replay", out, "--laws", "calls:10"], capsys)
    assert status == 2 and err.count("\n") == 1
    assert "opar-sim traces import" in err and str(out) in err
    tally(KIND, inputs_tried=1, answered_cleanly=1)


def test_an_import_onto_a_finished_one_names_a_command_that_works(tmp_path, capsys):
    out = tmp_path / "tau"
    argv = ["traces", "import", tau_bench_file(), "--format", "tau-bench", "--out", out]
    assert cli(argv, capsys)[0] == 0
    status, _, err = cli(argv, capsys)
    assert status == 2 and err.count("\n") == 1
    assert f"--out {out} already holds an imported run" in err
    assert "opar-sim traces import" in err and "--resume" not in err
    tally(KIND, inputs_tried=1, answered_cleanly=1)


def _resume(run: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    argv = ["run", SPEC, "--episodes", "30", "--workers", "1", "--out", run, "--resume"]
    return cli(argv, capsys)


@pytest.mark.parametrize(
    ("field", "value", "problem"),
    [
        ("episodes", "30", "episodes: Input should be a valid integer"),
        ("seed", 0.0, "seed: Input should be a valid integer"),
        ("task", [], "task: Input should be an object"),
    ],
)
def test_resume_on_a_spec_json_of_the_wrong_types_is_refused(
    tmp_path, capsys, reference_run, field, value, problem
):
    run = tmp_path / "run"
    shutil.copytree(reference_run, run)
    (run / "manifest.jsonl").unlink()  # nothing vouches for the spec
    data = json.loads((run / "spec.json").read_text())
    data[field] = value
    (run / "spec.json").write_text(json.dumps(data, indent=2) + "\n")
    status, _, err = _resume(run, capsys)
    assert status == 2 and err.count("\n") == 1, err
    assert f"--resume: {run / 'spec.json'} is damaged ({problem}" in err
    assert "cannot repair" in err
    tally(KIND, inputs_tried=1, answered_cleanly=1, faults_injected=1)


def test_resume_on_a_truncated_spec_json_says_what_is_wrong(tmp_path, capsys, reference_run):
    run = tmp_path / "run"
    shutil.copytree(reference_run, run)
    (run / "manifest.jsonl").unlink()
    (run / "spec.json").write_bytes((run / "spec.json").read_bytes()[:200])
    status, _, err = _resume(run, capsys)
    assert status == 2 and err.count("\n") == 1
    assert f"--resume: {run / 'spec.json'} is damaged (not valid JSON" in err
    tally(KIND, inputs_tried=1, answered_cleanly=1, faults_injected=1)


def test_resume_repairs_a_spec_json_of_the_wrong_types_its_manifest_vouches_for(
    tmp_path, capsys, reference_run
):
    run = tmp_path / "run"
    shutil.copytree(reference_run, run)
    data = json.loads((run / "spec.json").read_text())
    data["episodes"] = "30"  # lax validation read it as 30: it went on silently
    (run / "spec.json").write_text(json.dumps(data))
    status, out, err = _resume(run, capsys)
    assert status == 0, err
    said = " ".join(out.split())  # the console wraps a long line
    assert "spec.json was damaged (episodes: Input should be a valid integer" in said
    assert "rewritten from the spec (the manifest's checksum matches)" in said
    assert (run / "spec.json").read_bytes() == (reference_run / "spec.json").read_bytes()
    tally(KIND, inputs_tried=1, answered_cleanly=1, faults_injected=1)


def test_resume_repairs_a_truncated_spec_json_its_manifest_vouches_for(
    tmp_path, capsys, reference_run
):
    run = tmp_path / "run"
    shutil.copytree(reference_run, run)
    (run / "spec.json").write_bytes((run / "spec.json").read_bytes()[:200])
    status, out, err = _resume(run, capsys)
    assert (status, err) == (0, "")
    said = " ".join(out.split())
    assert f"resume: {run}: spec.json was damaged (not valid JSON: " in said
    assert "rewritten from the spec (the manifest's checksum matches)" in said
    assert (run / "spec.json").read_bytes() == (reference_run / "spec.json").read_bytes()
    tally(KIND, inputs_tried=1, answered_cleanly=1, faults_injected=1)
