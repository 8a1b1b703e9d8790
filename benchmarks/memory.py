"""A child process's CPU time and peak RSS, and the CLI's peak RSS against a run's size.

``child_usage`` runs a command and reads that one child's resource usage
(``os.wait4``: user + system CPU and ``ru_maxrss``), so measurements taken one
after another do not mix as ``getrusage(RUSAGE_CHILDREN)``'s maximum would.
``cli_run`` runs ``opar-sim run SPEC --controller pid --workers 1`` in a fresh
interpreter; the peak RSS of a run should not grow with its episodes, since
the runner streams every chunk to the run directory.

    python benchmarks/memory.py [SMALL LARGE]    # default 1000 100000
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "experiments" / "flight_booking.toml"


@dataclass(frozen=True)
class Usage:
    """What one child process used."""

    cpu_seconds: float  # user + system
    max_rss_mib: float


def child_usage(argv: Sequence[str]) -> Usage:
    """Run ``argv`` (from the repository root, output discarded) and return its usage.

    Raises:
        RuntimeError: The command failed (its stderr's last lines are in the message).
    """
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            err.seek(0)
            tail = err.read().decode(errors="replace").strip().splitlines()[-3:]
            raise RuntimeError(f"{' '.join(argv)} exited {proc.returncode}: {' | '.join(tail)}")
    # Linux reports ru_maxrss in KiB
    return Usage(usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024)


def cli_run(episodes: int, out: Path, *extra: str) -> Usage:
    """``opar-sim run`` of the default spec with the PID, serially, into ``out``."""
    argv = [sys.executable, "-m", "opar_sim.cli", "run", str(SPEC), "--controller", "pid"]
    argv += ["--workers", "1", "--episodes", str(episodes), "--out", str(out), *extra]
    return child_usage(argv)


def main(argv: Sequence[str] | None = None) -> None:
    """Print the peak RSS of a small and a large run side by side."""
    args = list(sys.argv[1:] if argv is None else argv)
    small, large = (int(a) for a in args) if args else (1_000, 100_000)
    with tempfile.TemporaryDirectory() as tmp:
        a = cli_run(small, Path(tmp) / "small")
        b = cli_run(large, Path(tmp) / "large")
    print(f"peak RSS, {small:,} episodes: {a.max_rss_mib:7.1f} MiB")
    print(f"peak RSS, {large:,} episodes: {b.max_rss_mib:7.1f} MiB")
    print(f"ratio: {b.max_rss_mib / a.max_rss_mib:.2f}x (target: within 1.5x)")


if __name__ == "__main__":
    main()
