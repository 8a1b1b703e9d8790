"""A killed ``claims`` run is no dead end: the rerun names a command, and that command finishes it.

Issue 31's attack: a ``claims`` run killed midway left ``OUT/runs/...`` that the rerun into
the same ``--out`` refused ("use --resume to finish it") while ``claims`` had no
``--resume``.  Now ``claims --resume`` finishes it (every arm's run directory resumes from
its manifest) to the bytes of an uninterrupted run, and the refusal names that command:
these tests run the very command the message names.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import EXPERIMENTS
from tests.reliability.conftest import cli, complete_lines_valid, tally

KIND = "dead ends"
ROOT = Path(__file__).resolve().parents[2]
CLAIM = ["--quick", "--only", "replan_beats_no_replan", "--root", str(EXPERIMENTS.parent)]
RECHECK = ["--recheck", "--cap", "40", "--only", "pid_success", "--root", str(EXPERIMENTS.parent)]
NAMED = re.compile(r": (opar-sim claims .*--resume) \(or another --out\)$")


@pytest.fixture(scope="module")
def whole(tmp_path_factory):
    """Uninterrupted runs: {flags: the output directory} for the claim and the re-check."""
    from opar_sim.cli import main

    root = tmp_path_factory.mktemp("claims-whole")
    found = {}
    for name, flags in (("claims", CLAIM), ("recheck", RECHECK)):
        assert main(["claims", *flags, "--workers", "1", "--out", str(root / name)]) == 0
        found[name] = root / name
    return found


def _named_command(err: str) -> list[str]:
    """The command a one-line refusal names, as argv (without the leading ``opar-sim``)."""
    assert err.count("\n") == 1, err
    match = NAMED.search(err.strip())
    assert match, err
    argv = shlex.split(match.group(1))
    assert argv[:2] == ["opar-sim", "claims"] and argv[-1] == "--resume"
    return argv[1:]


def _rerun_then_named(out: Path, flags: list[str], capsys, state: str) -> str:
    """Rerun into ``out`` (refused, naming a command); run that command; its stdout."""
    status, _, err = cli(["claims", *flags, "--workers", "1", "--out", out], capsys)
    assert status == 2 and f"--out {out} holds {state}" in err, err
    status, stdout, err = cli(_named_command(err), capsys)
    assert (status, err) == (0, "")
    return stdout


def _kill_after(argv: list[str], out: Path, lines: int) -> bool:
    """Start ``opar-sim ARGV``; SIGKILL it once ``lines`` manifest lines are on disk; killed?"""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen(
        [sys.executable, "-m", "opar_sim.cli", *argv],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 90
    while proc.poll() is None and time.monotonic() < deadline:
        written = sum(
            p.read_bytes().count(b"\n") for p in out.glob("runs/*/manifest.jsonl") if p.is_file()
        )
        if written >= lines:
            break
        time.sleep(0.002)
    killed = proc.poll() is None
    if killed:
        proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    return killed and proc.returncode == -signal.SIGKILL


@pytest.mark.parametrize("lines", [2, 12, 40])
def test_a_sigkilled_claims_run_is_finished_by_the_command_its_rerun_names(
    tmp_path, capsys, whole, lines
):
    out = tmp_path / "claims"
    killed = _kill_after(["claims", *CLAIM, "--workers", "1", "--out", str(out)], out, lines)
    assert killed, "the run finished before the kill"
    assert not (out / "claims.json").exists() and complete_lines_valid(out)
    _rerun_then_named(out, CLAIM, capsys, "a claims run that did not finish (killed?)")
    assert (out / "claims.json").read_bytes() == (whole["claims"] / "claims.json").read_bytes()
    tally(KIND, inputs_tried=1, answered_cleanly=1, faults_injected=1, kills_survived=1)


def _cut(out: Path, name: str, keep: int) -> None:
    path = out / name
    path.write_bytes(path.read_bytes()[:keep])


@pytest.mark.parametrize("study", ["claims", "recheck"])
def test_a_partial_claims_directory_is_finished_to_the_same_bytes(tmp_path, capsys, whole, study):
    out = tmp_path / study
    shutil.copytree(whole[study], out)
    (out / f"{study}.json").unlink()  # killed before the end: no result yet
    first = sorted((out / "runs").iterdir())[0]
    (first / "summary.json").unlink()
    _cut(first, "steps.jsonl", 3000)  # a torn line in the middle of a chunk
    flags = CLAIM if study == "claims" else RECHECK
    stdout = _rerun_then_named(out, flags, capsys, "a claims run that did not finish (killed?)")
    said = " ".join(stdout.split())
    assert f"resume: {first}: steps.jsonl is shorter than the manifest says" in said
    assert (out / f"{study}.json").read_bytes() == (whole[study] / f"{study}.json").read_bytes()
    tally(KIND, inputs_tried=1, answered_cleanly=1, faults_injected=1)


def test_a_claims_run_killed_before_any_arm_wrote_starts_on_resume(tmp_path, capsys, whole):
    out = tmp_path / "claims"
    shutil.copytree(whole["claims"], out)
    (out / "claims.json").unlink()
    shutil.rmtree(out / "runs")  # only claims_setup.json was written
    _rerun_then_named(out, CLAIM, capsys, "a claims run that did not finish (killed?)")
    assert (out / "claims.json").read_bytes() == (whole["claims"] / "claims.json").read_bytes()
    tally(KIND, inputs_tried=1, answered_cleanly=1, faults_injected=1)


def test_a_finished_claims_run_rerun_names_the_command_that_measures_it_again(
    tmp_path, capsys, whole
):
    out = tmp_path / "claims"
    shutil.copytree(whole["claims"], out)
    _rerun_then_named(out, CLAIM, capsys, "a finished claims run (claims.json)")
    assert (out / "claims.json").read_bytes() == (whole["claims"] / "claims.json").read_bytes()
    tally(KIND, inputs_tried=1, answered_cleanly=1)


def test_resume_with_other_flags_names_the_command_that_started_it(tmp_path, capsys, whole):
    out = tmp_path / "claims"
    shutil.copytree(whole["claims"], out)
    other = ["--quick", "--only", "pid_success", "--root", str(EXPERIMENTS.parent)]
    status, _, err = cli(["claims", *other, "--workers", "1", "--out", out, "--resume"], capsys)
    assert status == 2 and f"--resume: {out} was started by `" in err
    assert _named_command(err) == ["claims", *CLAIM, "--out", str(out), "--resume"]
    tally(KIND, inputs_tried=1, answered_cleanly=1)


def test_claims_resume_needs_an_out(capsys):
    status, _, err = cli(["claims", *CLAIM, "--resume"], capsys)
    assert status == 2 and err.count("\n") == 1
    assert "--resume needs --out DIR: the claims run to finish" in err
    tally(KIND, inputs_tried=1, answered_cleanly=1)
