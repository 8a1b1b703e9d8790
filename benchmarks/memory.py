"""Peak memory of a run against its number of episodes (it should stay flat).

Runs the default experiment with 500 and with 5000 episodes, serially, under
tracemalloc, and prints the peaks side by side.

    python benchmarks/memory.py
"""

from __future__ import annotations

import tempfile
import tracemalloc
from pathlib import Path

from opar_sim.experiment.build import load_spec
from opar_sim.experiment.edit import with_overrides
from opar_sim.experiment.runner import run_experiment

ROOT = Path(__file__).resolve().parents[1]


def peak(episodes: int) -> float:
    spec = with_overrides(
        load_spec(ROOT / "experiments" / "flight_booking.toml"), episodes=episodes
    )
    with tempfile.TemporaryDirectory() as tmp:
        tracemalloc.start()
        run_experiment(spec, Path(tmp) / "run")
        _, top = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    return top / 2**20


def main() -> None:
    small, large = peak(500), peak(5000)
    print(f"peak traced memory, 500 episodes : {small:6.2f} MiB")
    print(f"peak traced memory, 5000 episodes: {large:6.2f} MiB")
    print(f"ratio for 10x the episodes       : {large / small:6.2f}x")


if __name__ == "__main__":
    main()
