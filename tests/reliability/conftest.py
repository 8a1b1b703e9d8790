"""Shared pieces of the reliability tests: small specs, the CLI in-process, and the tally.

Every test adds what it tried to ``TALLY`` (inputs tried, answered cleanly,
faults injected, kills survived, bytes lost) under its kind; the session's
terminal summary prints the table (issue 15's closing note quotes it).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest

from opar_sim.cli import main
from tests.conftest import EXPERIMENTS

TALLY: defaultdict[str, Counter[str]] = defaultdict(Counter)
COLUMNS = ("inputs tried", "answered cleanly", "faults injected", "kills survived", "bytes lost")
RUN_FILES = ("episodes.jsonl", "steps.jsonl", "summary.json")


def tally(kind: str, **counts: int) -> None:
    """Add counts (keys are the column names with ``_`` for spaces) to ``kind``'s row."""
    for key, value in counts.items():
        TALLY[kind][key.replace("_", " ")] += value


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The table of what the reliability tests tried, per kind."""
    if not TALLY:
        return
    write = terminalreporter.write_line
    write("")
    write("| kind | " + " | ".join(COLUMNS) + " |")
    write("|---" * (len(COLUMNS) + 1) + "|")
    for kind in sorted(TALLY):
        row = TALLY[kind]
        write(f"| {kind} | " + " | ".join(str(row.get(c, 0)) for c in COLUMNS) + " |")
    total = Counter[str]()
    for row in TALLY.values():
        total.update(row)
    write("| **all** | " + " | ".join(str(total.get(c, 0)) for c in COLUMNS) + " |")
    out = Path("/tmp/opar-sim-reliability-tally.json")
    with contextlib.suppress(OSError):
        out.write_text(json.dumps(TALLY, indent=1, sort_keys=True) + "\n")


def small_spec(
    tmp_path: Path, name: str = "fb", extra: str = "", base: str = "flight_booking"
) -> Path:
    """A copy of a shipped experiment with ``extra`` TOML appended (tables or keys)."""
    text = (EXPERIMENTS / f"{base}.toml").read_text()
    path = tmp_path / f"{name}.toml"
    path.write_text(text + "\n" + extra)
    return path


def cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """Run ``opar-sim ARGV`` in-process: (exit status, stdout, stderr)."""
    status = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def digests(out: Path, names: tuple[str, ...] = RUN_FILES) -> dict[str, bytes]:
    """The bytes of a run's (or a sweep's) result files, by relative path."""
    return {
        str(p.relative_to(out)): p.read_bytes()
        for p in sorted(out.rglob("*"))
        if p.is_file() and p.name in names
    }


def bytes_lost(expected: dict[str, bytes], found: dict[str, bytes]) -> int:
    """Bytes of ``expected`` not reproduced in ``found`` (a file missing loses all of it)."""
    lost = 0
    for name, data in expected.items():
        got = found.get(name, b"")
        if got != data:
            same = sum(1 for a, b in zip(data, got, strict=False) if a == b)
            lost += max(len(data) - same, 1)
    return lost


def complete_lines_valid(out: Path) -> bool:
    """Every complete line of every JSON-lines file under ``out`` is a JSON object."""
    for path in out.rglob("*.jsonl"):
        for raw in path.read_bytes().splitlines(keepends=True):
            if not raw.endswith(b"\n"):
                continue
            try:
                if not isinstance(json.loads(raw), dict):
                    return False
            except ValueError:
                return False
    return True


def sha(data: bytes) -> str:
    """Hex SHA-256."""
    return hashlib.sha256(data).hexdigest()


@pytest.fixture(scope="session")
def reference_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """An uninterrupted small run of flight_booking (30 episodes, serial)."""
    out = tmp_path_factory.mktemp("ref") / "run"
    assert (
        main(
            [
                "run",
                str(EXPERIMENTS / "flight_booking.toml"),
                "--episodes",
                "30",
                "--workers",
                "1",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    yield out
