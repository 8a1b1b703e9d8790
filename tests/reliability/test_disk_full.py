"""A full disk: one clear line (exit 1), every finished line intact, ``--resume`` completes.

Runs on a small tmpfs mounted for the test (needs root and ``mount -t tmpfs``;
skipped with a message otherwise).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import EXPERIMENTS
from tests.reliability.conftest import bytes_lost, cli, complete_lines_valid, digests, tally

SPEC = EXPERIMENTS / "flight_booking.toml"
FULL = re.compile(
    r"^opar-sim: error: cannot write (?P<file>\S+): No space left on device; finished episodes "
    r"are kept: free space and rerun with --resume --out (?P<out>\S+)\n$"
)


def _mount(path: Path, size: str) -> bool:
    path.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
        capture_output=True,
        check=False,
    )
    return done.returncode == 0


@pytest.fixture
def disk(tmp_path):
    where = tmp_path / "disk"
    if shutil.which("mount") is None or not _mount(where, "160k"):
        pytest.skip("cannot mount a tmpfs here (needs root): the disk-full test is skipped")
    yield where
    subprocess.run(["umount", "-l", str(where)], check=False)


def _grow(disk: Path, size: str = "8m") -> None:
    subprocess.run(["mount", "-o", f"remount,size={size}", str(disk)], check=True)


def _intact(out: Path) -> bool:
    """No torn line: every JSON-lines file ends at a line end, every line is an object."""
    for path in out.rglob("*.jsonl"):
        data = path.read_bytes()
        if data and not data.endswith(b"\n"):
            return False
    return complete_lines_valid(out)


@pytest.mark.parametrize("command", ["run", "sweep"])
def test_a_full_disk_keeps_finished_lines_and_resume_completes(tmp_path, capsys, disk, command):
    spec = tmp_path / "s.toml"
    spec.write_text(SPEC.read_text() + '\n[sweep]\n"controller.params.kp" = [0.5, 2.0]\n')
    argv = [command, spec, "--episodes", "30", "--workers", "1"]
    whole = tmp_path / "whole"
    assert cli([*argv, "--out", whole], capsys)[0] == 0
    out = disk / "out"
    status, _, err = cli([*argv, "--out", out], capsys)
    assert status == 1
    full = FULL.match(err)
    assert full and full["out"] == str(out), err  # the hint names the run's own directory
    assert _intact(out)
    _grow(disk)
    status, _, err = cli([*argv, "--out", out, "--resume"], capsys)
    assert (status, err) == (0, "")
    names = ("episodes.jsonl", "steps.jsonl", "summary.json", "sweep_summary.json")
    lost = bytes_lost(digests(whole, names), digests(out, names))
    assert lost == 0
    tally("disk full", inputs_tried=1, answered_cleanly=1, faults_injected=1, bytes_lost=lost)


def test_commands_writing_into_a_full_disk_say_so_in_one_line(tmp_path, capsys, disk):
    _grow(disk, "2m")
    run = disk / "run"
    assert cli(["run", SPEC, "--episodes", "5", "--workers", "1", "--out", run], capsys)[0] == 0
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
    try:  # fill the disk to the last byte
        while os.write(fd, b"\0" * 4096):
            pass
    except OSError:
        pass
    finally:
        os.close(fd)
    for argv in (["plot", run], ["report", run]):
        status, _, err = cli(argv, capsys)
        assert status == 1 and err.count("\n") == 1, err
        assert "No space left on device" in err
        tally("disk full", inputs_tried=1, answered_cleanly=1, faults_injected=1)
    tune = tmp_path / "t.toml"
    tune.write_text(
        SPEC.read_text() + "\n[tune]\ntrials = 2\ntrain_episodes = 2\n"
        'holdout_episodes = 2\n\n[tune.space]\n"controller.params.kp" = '
        "{ low = 0.5, high = 2.0 }\n"
    )
    status, _, err = cli(["tune", tune, "--workers", "1", "--out", disk / "tune"], capsys)
    assert status == 1 and err.count("\n") == 1 and "No space left on device" in err, err
    filler.unlink()
    status, _, err = cli(
        ["tune", tune, "--workers", "1", "--out", disk / "tune", "--resume"], capsys
    )
    assert (status, err) == (0, "")
    tally("disk full", inputs_tried=1, answered_cleanly=1, faults_injected=1)
