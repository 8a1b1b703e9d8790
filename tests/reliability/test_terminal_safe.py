"""Strings from a shared file never act on the terminal: control characters are shown escaped."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from opar_sim.measure.table import TextTable, printable
from tests.reliability.conftest import cli, tally
from tests.traces.test_import import _record

CLEAR = "\x1b[2J"
LINK = "\x1b]8;;https://example.invalid/\x1b\\click\x1b]8;;\x1b\\"
BELL_C1 = "\x07\x9b31m"


def _write(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def _raw_controls(text: str) -> list[str]:
    return [c for c in text if (ord(c) < 32 and c not in "\n\t") or 0x7F <= ord(c) <= 0x9F]


def test_printable_escapes_every_control_character_and_keeps_the_rest():
    assert printable(CLEAR) == "\\x1b[2J"
    assert printable(BELL_C1) == "\\x07\\x9b31m"
    assert printable("tab\tand\nnewline, é, ✓") == "tab\tand\nnewline, é, ✓"
    assert all(_raw_controls(printable(chr(c))) == [] for c in range(0x110) if c not in (9, 10))


def test_a_table_of_file_strings_renders_no_control_character():
    table = TextTable(CLEAR, [LINK], [[BELL_C1]], [CLEAR])
    assert _raw_controls(str(table)) == []
    from io import StringIO

    from rich.console import Console

    console = Console(file=StringIO(), width=100, color_system=None)
    console.print(table.to_rich())
    assert _raw_controls(console.file.getvalue()) == []


def test_trace_strings_reach_the_terminal_escaped(tmp_path, capsys):
    model = f"agent{CLEAR}{LINK}"
    path = _write(tmp_path / "runs.jsonl", [_record(model=model), _record(trial=1, model=model)])
    status, out, err = cli(
        ["traces", "import", path, "--format", "openai-chat", "--out", tmp_path / "imported"],
        capsys,
    )
    assert status == 0, err
    status, out2, err2 = cli(["traces", "compare", tmp_path / "imported"], capsys)
    assert status == 0, err2
    for text in (out, err, out2, err2):
        assert _raw_controls(text) == [], text
    # an error line quoting a value from the file
    bad = _write(tmp_path / "bad.jsonl", [_record(trial=CLEAR)])
    status, _, err = cli(
        ["traces", "import", bad, "--format", "openai-chat", "--out", tmp_path / "bad"], capsys
    )
    assert status == 2 and "\\x1b[2J" in err and _raw_controls(err) == []
    tally("terminal-safe strings", inputs_tried=3, answered_cleanly=3)


def test_a_task_id_with_escapes_reaches_the_terminal_escaped(tmp_path, capsys):
    task = f"t{CLEAR}{LINK}"
    path = _write(tmp_path / "runs.jsonl", [_record(task_id=task), _record(task_id=task, trial=1)])
    argv = ["traces", "import", path, "--format", "openai-chat", "--out", tmp_path / "o"]
    status, out, err = cli(argv, capsys)
    assert status == 2 and err.count("\n") == 1  # a task id is a whole number in this format
    assert "run 0 (task t\\x1b[2J\\x1b]8;;https://example.invalid/" in err
    assert _raw_controls(out + err) == []
    tally("terminal-safe strings", inputs_tried=1, answered_cleanly=1)
