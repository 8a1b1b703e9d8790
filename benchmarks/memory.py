"""A child process's CPU time and peak RSS, and the CLI's peak RSS against a run's size.

``child_usage`` runs a command and reads that one child's resource usage
(``os.wait4``: user + system CPU and ``ru_maxrss``, through a small wrapper
interpreter), so measurements taken one after another do not mix as
``getrusage(RUSAGE_CHILDREN)``'s maximum would, nor include this process's size.
``cli_run`` runs ``opar-sim run SPEC --controller pid --workers 1`` in a fresh
interpreter; the peak RSS of a run should not grow with its episodes, since
the runner streams every chunk to the run directory.

    python benchmarks/memory.py [SMALL LARGE]    # default 1000 100000
"""

from __future__ import annotations

import json
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


# Runs the command and reports its usage: a small interpreter between this process and the
# command, because a child's ru_maxrss starts from the RSS of the process that forked it
# (Linux counts the parent's pages until exec), which would hide the command's own peak.
_WRAPPER = """
import json, os, subprocess, sys
proc = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL)
_, status, usage = os.wait4(proc.pid, 0)
code = os.waitstatus_to_exitcode(status)
print(json.dumps([code, usage.ru_utime + usage.ru_stime, usage.ru_maxrss]))
"""


def child_usage(argv: Sequence[str]) -> Usage:
    """Run ``argv`` (from the repository root, output discarded) and return its usage.

    Raises:
        RuntimeError: The command failed (its stderr's last lines are in the message).
    """
    out = subprocess.run(
        [sys.executable, "-c", _WRAPPER, *argv], cwd=ROOT, capture_output=True, text=True
    )
    if out.returncode != 0 or not out.stdout.strip():
        raise RuntimeError(f"{' '.join(argv)}: the wrapper failed: {out.stderr.strip()[-300:]}")
    code, cpu, max_rss_kib = json.loads(out.stdout.strip().splitlines()[-1])
    if code != 0:
        tail = out.stderr.strip().splitlines()[-3:]
        raise RuntimeError(f"{' '.join(argv)} exited {code}: {' | '.join(tail)}")
    return Usage(cpu, max_rss_kib / 1024)  # Linux reports ru_maxrss in KiB


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
