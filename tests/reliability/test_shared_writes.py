"""Every writer stays inside its directory: no write through a planted link, no name that escapes.

Issue 31's attack planted symbolic links in a shared run directory and named a spec ``..``;
each case here is one of its findings, written as the test first.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from opar_sim.cli import main
from opar_sim.rundir import RunDirError, check_destination, file_stem, open_append, write_bytes
from tests.conftest import EXPERIMENTS
from tests.reliability.conftest import cli, tally

SPEC = EXPERIMENTS / "flight_booking.toml"


def _renamed(tmp_path: Path, name: str) -> Path:
    lines = SPEC.read_text(encoding="utf-8").splitlines()
    first = next(k for k, line in enumerate(lines) if line.startswith("name ="))
    lines[first] = f"name = {name!r}".replace("'", '"')
    path = tmp_path / "renamed.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_a_spec_named_dot_dot_cannot_take_the_output_out_of_runs(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name in ("..", "."):
        status, _, err = cli(["run", _renamed(tmp_path, name), "--episodes", "2"], capsys)
        assert status == 2 and err.count("\n") == 1 and "not a usable name" in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["renamed.toml"]
    tally("writes outside the run directory", inputs_tried=2, answered_cleanly=2)


def test_init_refuses_a_dangling_link_and_writes_nothing_through_it(tmp_path, capsys):
    victim = tmp_path / "victim.py"
    (tmp_path / "work").mkdir()
    os.symlink(victim, tmp_path / "work" / "law.py")
    status, _, err = cli(
        ["init", "law", "--kind", "controller", "--dir", tmp_path / "work"], capsys
    )
    assert status == 2 and "is a symbolic link" in err and err.count("\n") == 1
    assert not victim.exists() and not (tmp_path / "work" / "test_law.py").exists()
    tally("writes outside the run directory", inputs_tried=1, answered_cleanly=1)


def test_init_prints_a_directory_with_markup_as_text(tmp_path, capsys):
    where = tmp_path / "a[/]b"
    status, out, err = cli(["init", "law", "--kind", "controller", "--dir", where], capsys)
    assert status == 0, err
    assert "a[/]b" in out and (where / "law.py").is_file()
    tally("exit 70 on bad input", inputs_tried=1, answered_cleanly=1)


def test_a_scheduler_that_is_not_an_address_is_one_line_exit_2(tmp_path, capsys):
    for address in ("not an address", "tcp://host", "host:port"):
        argv = ["run", SPEC, "--episodes", "2", "--scheduler", address, "--out", tmp_path / "r"]
        status, _, err = cli(argv, capsys)
        assert status == 2 and err.count("\n") == 1 and "not a Dask scheduler address" in err
    tally("exit 70 on bad input", inputs_tried=3, answered_cleanly=3)


# --- links planted in a shared run directory --------------------------------------------------


@pytest.fixture(scope="module")
def shared_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished run, as a colleague would share it (copied fresh for each test)."""
    out = tmp_path_factory.mktemp("shared") / "run"
    argv = ["run", str(SPEC), "--episodes", "6", "--workers", "1", "--seed", "2", "--out", str(out)]
    assert main(argv) == 0
    return out


@pytest.fixture
def run_dir(shared_run: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "run"
    shutil.copytree(shared_run, copy, symlinks=True)
    return copy


def _victim(tmp_path: Path) -> Path:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n", encoding="utf-8")
    return victim


@pytest.mark.parametrize(
    ("planted", "argv"),
    [
        ("report.html", ["report", "{run}"]),
        ("replay_threshold.jsonl", ["replay", "{run}", "--controller", "threshold"]),
        ("traces.otlp.json", ["export", "{run}"]),
        ("frontier.png", ["replay", "{run}", "--laws"]),
        ("figures/figures.json", ["plot", "{run}"]),
    ],
)
def test_no_writer_follows_a_planted_file_link(run_dir, tmp_path, capsys, planted, argv):
    victim = _victim(tmp_path)
    (run_dir / planted).parent.mkdir(exist_ok=True)
    (run_dir / planted).unlink(missing_ok=True)
    os.symlink(victim, run_dir / planted)
    status, _, err = cli([a.format(run=run_dir) for a in argv], capsys)
    assert victim.read_text(encoding="utf-8") == "precious\n"
    assert status == 2 and err.count("\n") == 1 and "symbolic link" in err, err
    tally("writes outside the run directory", inputs_tried=1, answered_cleanly=1)


def test_a_linked_figures_directory_is_refused(run_dir, tmp_path, capsys):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.rmtree(run_dir / "figures", ignore_errors=True)
    os.symlink(elsewhere, run_dir / "figures")
    status, _, err = cli(["plot", run_dir], capsys)
    assert list(elsewhere.iterdir()) == []
    assert status == 2 and "symbolic link" in err and err.count("\n") == 1, err
    tally("writes outside the run directory", inputs_tried=1, answered_cleanly=1)


def test_a_planted_temporary_file_link_is_not_followed(run_dir, tmp_path):
    victim = _victim(tmp_path)
    for name in (".summary.json.tmp", ".report.html.tmp"):
        os.symlink(victim, run_dir / name)
    write_bytes(run_dir / "summary.json", b"{}\n", inside=run_dir)
    assert victim.read_text(encoding="utf-8") == "precious\n"
    assert (run_dir / "summary.json").read_bytes() == b"{}\n"


def test_appends_refuse_a_linked_run_file(run_dir, tmp_path):
    victim = _victim(tmp_path)
    (run_dir / "steps.jsonl").unlink()
    os.symlink(victim, run_dir / "steps.jsonl")
    with pytest.raises(RunDirError, match="symbolic link"):
        open_append(run_dir / "steps.jsonl")
    assert victim.read_text(encoding="utf-8") == "precious\n"
    with open_append(run_dir / "new.jsonl") as f:  # a plain file: created, appended
        f.write(b"{}\n")
    assert (run_dir / "new.jsonl").read_bytes() == b"{}\n"


def test_names_that_become_file_names_are_one_safe_piece():
    assert file_stem("threshold") == "threshold"
    assert file_stem("path/to/law.py:Law") == "path_to_law.py_Law"
    assert file_stem("x\nINJECTED LINE") == "x_INJECTED_LINE"
    assert file_stem("..") == "_.." and "/" not in file_stem("../../etc/passwd")


def test_check_destination_keeps_writes_inside(tmp_path):
    inside = tmp_path / "run"
    (inside / "sub").mkdir(parents=True)
    os.symlink(tmp_path, inside / "up")
    check_destination(inside / "sub" / "a.json", inside)
    with pytest.raises(RunDirError, match="resolves outside"):
        check_destination(inside / "up" / "a.json", inside)
