"""``tune --resume`` on a journal someone left, shared or damaged: one line, or the same bytes.

Issue 31's attack: a deleted journal with a stale Optuna lock made ``tune --resume`` wait
forever (Optuna's grace period stats the lock's target, which is gone); a journal from
another search space was adopted (``best.toml`` then held ``kp = 7.79``, outside the spec's
[0.2, 3.0]); a damaged journal exited 70; a FIFO or a link to ``/dev/zero`` given as a
journal was read without limit.  One test per case.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from opar_sim.running.journal import JOURNAL_FILE
from tests.reliability.conftest import cli, small_spec, tally

KIND = "tune journals"
ROOT = Path(__file__).resolve().parents[2]
TUNE = """
[tune]
trials = 4
train_episodes = 4
holdout_episodes = 4

[tune.space]
"controller.params.kp" = {{ {kp} }}
"""
SPACE = "low = 0.2, high = 3.0, log = true"
FOREIGN = "low = 5.0, high = 9.0"
RESULT_FILES = ("trials.jsonl", "tune.json", "best.toml")


def _tune(spec: Path, out: Path, *extra: str) -> list[str]:
    return ["tune", str(spec), "--replicates", "2", "--workers", "1", "--out", str(out), *extra]


@pytest.fixture(scope="module")
def tuned(tmp_path_factory):
    """(spec, a finished tuning of it, a finished tuning of another space over kp)."""
    from opar_sim.cli import main

    root = tmp_path_factory.mktemp("tunings")
    spec = small_spec(root, "kp", TUNE.format(kp=SPACE))
    other = small_spec(root, "kp_wide", TUNE.format(kp=FOREIGN))
    assert main(_tune(spec, root / "ours")) == 0
    assert main(_tune(other, root / "theirs")) == 0
    return spec, root / "ours", root / "theirs"


def _copy(tuned, tmp_path: Path) -> tuple[Path, Path]:
    spec, ours, _ = tuned
    out = tmp_path / "tuning"
    shutil.copytree(ours, out)
    return spec, out


def _journal(out: Path, replicate: int = 0) -> Path:
    return out / f"replicate_{replicate}" / JOURNAL_FILE


def _same_bytes(a: Path, b: Path) -> bool:
    return all((a / n).read_bytes() == (b / n).read_bytes() for n in RESULT_FILES)


def test_a_deleted_journal_with_a_stale_lock_does_not_wait_forever(tuned, tmp_path):
    spec, out = _copy(tuned, tmp_path)
    for r in (0, 1):
        _journal(out, r).unlink()
    lock = Path(f"{_journal(out)}.lock")
    os.symlink(JOURNAL_FILE, lock)  # Optuna's symlink lock, pointing at the deleted journal
    for name in RESULT_FILES:
        (out / name).unlink()
    code = "import sys; from opar_sim.cli import main; sys.exit(main(sys.argv[1:]))"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run(
        [sys.executable, "-c", code, *_tune(spec, out, "--resume")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,  # it waited forever
    )
    assert (done.returncode, done.stderr) == (0, "")
    said = " ".join(done.stdout.split())
    assert f"resume: removed a stale Optuna lock, {lock} (its journal is gone)" in said
    assert f"resume: {out} holds no Optuna journal: the tuning starts from its first trial" in said
    assert not lock.is_symlink()
    assert _same_bytes(out, tuned[1])  # the tuning ran again whole, to the same bytes
    tally(KIND, inputs_tried=1, answered_cleanly=1, faults_injected=1)


def test_a_stale_lock_beside_a_journal_is_removed_and_said(tuned, tmp_path, capsys):
    spec, out = _copy(tuned, tmp_path)
    lock = Path(f"{_journal(out, 1)}.lock")
    os.symlink(JOURNAL_FILE, lock)
    status, stdout, err = cli(_tune(spec, out, "--resume"), capsys)
    assert (status, err) == (0, "")
    said = " ".join(stdout.split())
    assert f"resume: removed a stale Optuna lock, {lock} (left by a killed tuning)" in said
    assert _same_bytes(out, tuned[1])
    tally(KIND, inputs_tried=1, answered_cleanly=1, faults_injected=1)


def test_a_stale_lock_without_resume_is_refused_naming_resume(tuned, tmp_path, capsys):
    spec = tuned[0]
    out = tmp_path / "fresh"
    lock = Path(f"{_journal(out)}.lock")
    lock.parent.mkdir(parents=True)
    os.symlink(JOURNAL_FILE, lock)
    status, _, err = cli(_tune(spec, out), capsys)
    assert status == 2 and err.count("\n") == 1, err
    assert f"{lock}: a stale Optuna lock (left by a killed tuning)" in err
    assert "finish the tuning with --resume" in err
    tally(KIND, inputs_tried=1, answered_cleanly=1, faults_injected=1)


def _refused(tuned, out: Path, capsys) -> str:
    before = (out / "best.toml").read_bytes()
    status, _, err = cli(_tune(tuned[0], out, "--resume"), capsys)
    assert status == 2 and err.count("\n") == 1, err
    assert (out / "best.toml").read_bytes() == before  # nothing of it reached best.toml
    return " ".join(err.split())


def test_a_journal_of_another_search_space_is_refused(tuned, tmp_path, capsys):
    _, out = _copy(tuned, tmp_path)
    theirs = tuned[2]
    for r in (0, 1):
        shutil.copy(_journal(theirs, r), _journal(out, r))
    err = _refused(tuned, out, capsys)
    assert f"{_journal(out)}: trial 0 has controller.params.kp = " in err
    assert "(searched in [5, 9]); the spec's [tune.space] is [0.2, 3, log]" in err
    assert "a journal of another search space; move it away" in err
    tally(KIND, inputs_tried=1, answered_cleanly=1, faults_injected=1)


def test_a_journal_edited_outside_the_space_is_refused(tuned, tmp_path, capsys):
    _, out = _copy(tuned, tmp_path)
    journal = _journal(out, 1)
    lines = journal.read_text().splitlines(keepends=True)
    # the first trial's parameter: its internal value, inside a [0.2, 3.0] distribution
    at = next(i for i, line in enumerate(lines) if '"param_name":"controller.params.kp"' in line)
    lines[at] = lines[at].replace('"param_value_internal":', '"param_value_internal":7.79,"x":')
    journal.write_text("".join(lines))
    err = _refused(tuned, out, capsys)
    assert f"{journal}: trial 0 has controller.params.kp = 7.79 (searched in [0.2, 3, log])" in err
    tally(KIND, inputs_tried=1, answered_cleanly=1, faults_injected=1)


def test_a_journal_of_another_parameter_is_refused(tuned, tmp_path, capsys):
    _, out = _copy(tuned, tmp_path)
    journal = _journal(out)
    journal.write_text(journal.read_text().replace("controller.params.kp", "controller.params.ki"))
    err = _refused(tuned, out, capsys)
    assert f"{journal}: trial 0 searched controller.params.ki, not in the spec's" in err
    tally(KIND, inputs_tried=1, answered_cleanly=1, faults_injected=1)


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ('{"op_code": nonsense\n', ":5: not a JSON object: a damaged Optuna journal"),
        ("[1, 2]\n", ":5: not a JSON object: a damaged Optuna journal"),
        ("{}\n", ": a damaged Optuna journal (KeyError: 'op_code')"),
        ('{"op_code": 99, "worker_id": "w"}\n', ": a damaged Optuna journal (AssertionError"),
    ],
    ids=["not-json", "not-an-object", "no-op-code", "unknown-op-code"],
)
def test_a_damaged_journal_is_one_line_exit_2(tuned, tmp_path, capsys, line, problem):
    _, out = _copy(tuned, tmp_path)
    journal = _journal(out, 1)
    lines = journal.read_text().splitlines(keepends=True)
    lines[4] = line
    journal.write_text("".join(lines))
    err = _refused(tuned, out, capsys)
    assert f"{journal}{problem}" in err
    assert "move it away to run its trials again, or tune into another --out" in err
    tally(KIND, inputs_tried=1, answered_cleanly=1, faults_injected=1)


def test_a_fifo_given_as_a_journal_is_refused(tuned, tmp_path, capsys):
    _, out = _copy(tuned, tmp_path)
    journal = _journal(out)
    journal.unlink()
    os.mkfifo(journal)
    err = _refused(tuned, out, capsys)
    assert f"{journal}: not a regular file (a FIFO); opar-sim reads only regular files" in err
    tally(KIND, inputs_tried=1, answered_cleanly=1, faults_injected=1)


def test_a_link_to_dev_zero_given_as_a_journal_is_refused(tuned, tmp_path, capsys):
    _, out = _copy(tuned, tmp_path)
    journal = _journal(out)
    journal.unlink()
    os.symlink("/dev/zero", journal)
    err = _refused(tuned, out, capsys)
    assert f"{journal} is a symbolic link; refusing to write through it" in err
    tally(KIND, inputs_tried=1, answered_cleanly=1, faults_injected=1)


def test_a_journal_over_the_ceiling_names_how_to_raise_it(tuned, tmp_path, capsys, monkeypatch):
    _, out = _copy(tuned, tmp_path)
    monkeypatch.setenv("OPAR_SIM_MAX_INPUT_MB", "0.005")
    err = _refused(tuned, out, capsys)
    assert f"{_journal(out)}: " in err
    assert "over the 0.005 MB ceiling of a file read; set OPAR_SIM_MAX_INPUT_MB to raise it" in err
    tally(KIND, inputs_tried=1, answered_cleanly=1, faults_injected=1)
