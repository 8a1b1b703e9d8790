"""SIGKILL real ``run``, ``sweep`` and ``tune`` processes at 20 seeded random moments.

Each kill lands while the process writes: once a seeded random number of
manifest (or Optuna journal) lines is on disk, after a seeded random delay of
up to 0.3 s.  Afterwards every complete line on disk is a JSON object, and
``--resume`` gives the bytes of an uninterrupted run.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import EXPERIMENTS
from tests.reliability.conftest import bytes_lost, cli, complete_lines_valid, digests, tally

ROOT = Path(__file__).resolve().parents[2]
RNG = random.Random(15)
KILLS = {"run": 8, "sweep": 6, "tune": 6}
# kind: the progress files (glob under --out) and the range of their line count to wait for
PROGRESS = {
    "run": ("manifest.jsonl", 1, 9),
    "sweep": ("*/manifest.jsonl", 1, 16),
    "tune": ("replicate_*/optuna.journal", 1, 35),  # one journal per replicate
}
MOMENTS = {
    kind: [(RNG.randint(*PROGRESS[kind][1:]), RNG.uniform(0.0, 0.3)) for _ in range(n)]
    for kind, n in KILLS.items()
}

SWEEP = '\n[sweep]\n"controller.params.kp" = [0.5, 2.0]\n'
TUNE = """
[tune]
trials = 8
train_episodes = 6
holdout_episodes = 6

[tune.space]
"controller.params.kp" = { low = 0.2, high = 3.0, log = true }
"""
SETUP = {
    # kind: (spec text, extra flags)
    "run": ("", ["--episodes", "100"]),
    "sweep": (SWEEP, ["--episodes", "40"]),
    "tune": (TUNE, []),
}
RESULT_FILES = {
    "run": ("episodes.jsonl", "steps.jsonl", "summary.json"),
    "sweep": ("episodes.jsonl", "steps.jsonl", "summary.json", "sweep.json", "sweep_summary.json"),
    "tune": ("trials.jsonl", "tune.json", "best.toml"),
}


@pytest.fixture(scope="module")
def references(tmp_path_factory):
    found = {}
    root = tmp_path_factory.mktemp("kill-ref")
    for kind, (extra, flags) in SETUP.items():
        spec = root / f"{kind}.toml"
        spec.write_text((EXPERIMENTS / "flight_booking.toml").read_text() + extra)
        out = root / f"{kind}-whole"
        from opar_sim.cli import main

        assert main([kind, str(spec), *flags, "--workers", "1", "--out", str(out)]) == 0
        found[kind] = (spec, digests(out, RESULT_FILES[kind]))
    return found


def _lines(out: Path, pattern: str) -> int:
    return sum(p.read_bytes().count(b"\n") for p in out.glob(pattern) if p.is_file())


def _kill_at(argv: list[str], out: Path, pattern: str, lines: int, delay: float) -> bool:
    """Start ``opar-sim ARGV``; SIGKILL it ``delay`` s after ``lines`` progress lines; killed?"""
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
        if out.is_dir() and _lines(out, pattern) >= lines:
            break
        time.sleep(0.01)
    time.sleep(delay)
    killed = proc.poll() is None
    if killed:
        proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    return killed


@pytest.mark.parametrize(
    ("kind", "moment"),
    [(k, m) for k, ms in MOMENTS.items() for m in ms],
    ids=[f"{k}-{i}" for k, ms in MOMENTS.items() for i in range(len(ms))],
)
def test_a_killed_process_resumes_to_the_same_bytes(tmp_path, capsys, references, kind, moment):
    spec, expected = references[kind]
    _, flags = SETUP[kind]
    lines, delay = moment
    out = tmp_path / "out"
    argv = [kind, str(spec), *flags, "--workers", "1", "--out", str(out)]
    killed = _kill_at(argv, out, PROGRESS[kind][0], lines, delay)
    assert complete_lines_valid(out)
    status, _, err = cli([*argv, "--resume"], capsys)
    assert (status, err) == (0, "")
    assert complete_lines_valid(out)
    lost = bytes_lost(expected, digests(out, RESULT_FILES[kind]))
    assert lost == 0
    tally(
        f"kills ({kind})",
        inputs_tried=1,
        answered_cleanly=1,
        faults_injected=int(killed),
        kills_survived=int(killed),
        bytes_lost=lost,
    )
    assert killed, "the process finished before the kill"
