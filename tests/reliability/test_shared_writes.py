"""Every writer stays inside its directory: no write through a planted link, no name that escapes.

Issue 31's attack planted symbolic links in a shared run directory and named a spec ``..``;
each case here is one of its findings, written as the test first.
"""

from __future__ import annotations

import os
from pathlib import Path

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
