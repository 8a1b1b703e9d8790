"""Damaged run files and ``--resume``: repaired to the uninterrupted bytes, and said so.

Torn, garbage, shortened or deleted ``steps.jsonl`` / ``episodes.jsonl``, a
damaged manifest or ``spec.json``; a sweep killed before its first write; an
empty or missing directory.  What cannot be repaired exits 2 with one line.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable

import pytest

from tests.conftest import EXPERIMENTS
from tests.reliability.conftest import bytes_lost, cli, digests, tally

SPEC = EXPERIMENTS / "flight_booking.toml"
ARGS = ["--episodes", "30", "--workers", "1"]


def _middle(data: bytes) -> int:
    return data.index(b"\n", len(data) // 2) + 1


DAMAGES: dict[str, tuple[str, Callable[[bytes], bytes | None], str]] = {
    "steps torn mid-line": (
        "steps.jsonl",
        lambda d: d[: _middle(d) + 17],
        "steps.jsonl is shorter than the manifest",
    ),
    "steps extra torn tail": ("steps.jsonl", lambda d: d + b'{"episode": 3', "cut an unfinished"),
    "steps torn, episodes complete": (
        "steps.jsonl",
        lambda d: d[: len(d) // 3],
        "steps.jsonl is shorter than the manifest says",
    ),
    "steps garbage line": (
        "steps.jsonl",
        lambda d: d[: _middle(d)] + b"garbage\n" + d[_middle(d) :],
        "steps.jsonl does not match its checksum",
    ),
    "steps one byte flipped": (
        "steps.jsonl",
        lambda d: d[:100] + bytes([d[100] ^ 1]) + d[101:],
        "steps.jsonl does not match its checksum at episodes 0-2",
    ),
    "steps deleted": ("steps.jsonl", lambda d: None, "steps.jsonl is missing at episodes 0-2"),
    "episodes garbage line": (
        "episodes.jsonl",
        lambda d: d[: _middle(d)] + b"[1]\n" + d[_middle(d) :],
        "episodes.jsonl does not match its checksum",
    ),
    "episodes deleted": ("episodes.jsonl", lambda d: None, "episodes.jsonl is missing"),
    "episodes torn": ("episodes.jsonl", lambda d: d[:-30], "episodes.jsonl is shorter"),
    "manifest torn": ("manifest.jsonl", lambda d: d[: _middle(d) + 5], "cut an unfinished chunk"),
    "manifest deleted": ("manifest.jsonl", lambda d: None, "no manifest (an older run)"),
    "manifest header garbage": (
        "manifest.jsonl",
        lambda d: b"xx\n" + d[d.index(b"\n") + 1 :],
        "manifest.jsonl header damaged",
    ),
    "spec.json torn": ("spec.json", lambda d: d[:300], "spec.json was damaged (not valid JSON"),
    "spec.json deleted": ("spec.json", lambda d: None, "spec.json was missing: rewritten"),
    "summary deleted": ("summary.json", lambda d: None, "checked 10 chunk(s)"),
}


@pytest.mark.parametrize("damage", list(DAMAGES))
def test_resume_repairs_damage_to_the_uninterrupted_bytes(tmp_path, capsys, reference_run, damage):
    name, change, said = DAMAGES[damage]
    run = tmp_path / "run"
    shutil.copytree(reference_run, run)
    new = change((run / name).read_bytes())
    if new is None:
        (run / name).unlink()
    else:
        (run / name).write_bytes(new)
    status, out, err = cli(["run", SPEC, *ARGS, "--out", run, "--resume"], capsys)
    assert (status, err) == (0, "")
    assert said in out
    lost = bytes_lost(digests(reference_run), digests(run))
    assert lost == 0
    assert (run / "spec.json").read_bytes() == (reference_run / "spec.json").read_bytes()
    tally(
        "damage and resume", inputs_tried=1, answered_cleanly=1, faults_injected=1, bytes_lost=lost
    )


def test_a_run_that_cannot_be_repaired_exits_2(tmp_path, capsys, reference_run):
    run = tmp_path / "run"
    shutil.copytree(reference_run, run)
    (run / "spec.json").unlink()
    (run / "manifest.jsonl").unlink()
    status, _, err = cli(["run", SPEC, *ARGS, "--out", run, "--resume"], capsys)
    assert status == 2
    assert err == (
        f"opar-sim: error: --resume: {run / 'spec.json'} is missing and no manifest "
        "confirms the spec: cannot repair; start the run again in another directory\n"
    )
    other = tmp_path / "other"
    shutil.copytree(reference_run, other)
    status, printed, err = cli(
        ["run", SPEC, "--episodes", "31", "--workers", "1", "--out", other, "--resume"], capsys
    )
    assert (status, printed, err) == (  # refused before the header and the progress bar
        2,
        "",
        f"opar-sim: error: --resume: the spec differs from the one that started {other}\n",
    )
    tally("damage and resume", inputs_tried=2, answered_cleanly=2, faults_injected=2)


@pytest.mark.parametrize("where", ["missing", "empty"])
def test_resume_on_an_empty_or_missing_directory_starts_the_run(
    tmp_path, capsys, reference_run, where
):
    run = tmp_path / "run"
    if where == "empty":
        run.mkdir()
    status, _, err = cli(["run", SPEC, *ARGS, "--out", run, "--resume"], capsys)
    assert (status, err) == (0, "")
    assert bytes_lost(digests(reference_run), digests(run)) == 0
    tally("damage and resume", inputs_tried=1, answered_cleanly=1)


SWEEP = """
[sweep]
"controller.params.kp" = [0.5, 2.0]
"""


def test_a_sweep_killed_before_its_first_write_resumes(tmp_path, capsys):
    spec = tmp_path / "s.toml"
    spec.write_text(SPEC.read_text() + SWEEP)
    whole, resumed = tmp_path / "whole", tmp_path / "resumed"
    assert cli(["sweep", spec, "--episodes", "6", "--workers", "1", "--out", whole], capsys)[0] == 0
    status, _, err = cli(
        ["sweep", spec, "--episodes", "6", "--workers", "1", "--out", resumed, "--resume"], capsys
    )
    assert (status, err) == (0, "")
    names = ("episodes.jsonl", "steps.jsonl", "summary.json", "sweep.json", "sweep_summary.json")
    assert bytes_lost(digests(whole, names), digests(resumed, names)) == 0
    # and a sweep whose sweep.json was lost after some points were written
    (resumed / "sweep.json").unlink()
    shutil.rmtree(resumed / "001_kp=2")
    status, _, err = cli(
        ["sweep", spec, "--episodes", "6", "--workers", "1", "--out", resumed, "--resume"], capsys
    )
    assert (status, err) == (0, "")
    assert bytes_lost(digests(whole, names), digests(resumed, names)) == 0
    tally("damage and resume", inputs_tried=2, answered_cleanly=2, faults_injected=1)
