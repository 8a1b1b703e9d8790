"""Loop throughput against the floor, measured side by side in one process.

The floor is a bare SimPy process with four timeouts and a PID update per
step (docs/design.md §5).  The OPAR step is a full step of the simulated agent on
flight_booking with its record serialised to a JSON line.  The ratio is what
matters: absolute numbers move with the machine's load.

    python benchmarks/throughput.py [--episodes 2000]
"""

from __future__ import annotations

import argparse
import time

import simpy

import controllers
import environments
from opar_sim.agents import SimulatedAgent
from opar_sim.core.limits import Limits
from opar_sim.core.loop import run_episode
from opar_sim.core.seeding import episode_seed
from opar_sim.experiment.rundir import episode_lines


def floor(steps: int) -> float:
    """Seconds per step of a bare SimPy loop: four timeouts and a PID update."""
    pid = controllers.CognitivePID(1.0, 0.1, 2.0)

    def loop(env: simpy.Environment) -> simpy.events.ProcessGenerator:
        error = 1.0
        for _ in range(steps):
            for _phase in range(4):
                yield env.timeout(1.0)
            error *= 0.9
            pid.update(error, 4.0)

    env = simpy.Environment()
    env.process(loop(env))
    start = time.perf_counter()
    env.run()
    return (time.perf_counter() - start) / steps


def opar(episodes: int) -> tuple[float, int]:
    """Seconds per OPAR step (records serialised) and the number of steps run."""
    task = environments.make("flight_booking")
    agent = SimulatedAgent()
    controller = controllers.make("pid")
    limits = Limits()
    steps = 0
    start = time.perf_counter()
    for i in range(episodes):
        result = run_episode(task, agent, controller, limits, episode_seed(0, i), episode=i)
        episode_lines(result)
        steps += len(result.steps)
    return (time.perf_counter() - start) / steps, steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    best_floor = min(floor(50_000) for _ in range(args.repeats))
    best_opar, steps = min(opar(args.episodes) for _ in range(args.repeats))
    print(f"floor (bare SimPy, 4 timeouts + PID): {best_floor * 1e6:7.2f} µs/step")
    print(
        f"OPAR step (simulated agent, record) : {best_opar * 1e6:7.2f} µs/step "
        f"({1 / best_opar:,.0f} steps/s/core over {steps} steps)"
    )
    print(f"ratio OPAR / floor                  : {best_opar / best_floor:7.1f}x")


if __name__ == "__main__":
    main()
