"""The same toy agent loop three ways: plain Python, SimPy's floor, and a LangGraph peer.

The model is the noisy expert of the simulated agent reduced to its arithmetic:
each step the agent observes its progress, plans (the expert's action is right
with probability ``P_RIGHT``), acts (a right action adds ``GAIN`` to the
progress) and reflects (a PID update on the error ``1 - progress``; done once
the progress reaches 1 or after ``MAX_STEPS`` steps).  Every version runs the
same arithmetic with the same random stream, so their costs differ only by the
machinery around it:

* ``scalar_steps``: a plain ``while`` loop (the cost of the arithmetic itself);
* ``langgraph_steps``: a ``StateGraph`` with four trivial nodes, observe → plan
  → act → reflect, and a conditional edge from reflect back to observe or to the
  end (``langgraph`` is in the ``bench`` extra: ``pip install -e '.[bench]'``).

Each returns the CPU seconds spent and the loop steps run.
"""

from __future__ import annotations

import random
import time
from typing import Any, TypedDict

import controllers

P_RIGHT = 0.7
GAIN = 0.15
MAX_STEPS = 30


def _pid() -> controllers.CognitivePID:
    return controllers.CognitivePID(1.0, 0.1, 2.0)


def scalar_steps(episodes: int) -> tuple[float, int]:
    """Run the model in a plain loop: (CPU seconds, loop steps)."""
    steps = 0
    start = time.process_time()
    for episode in range(episodes):
        rng, pid = random.Random(episode), _pid()
        progress, n = 0.0, 0
        while True:
            observed = progress
            right = rng.random() < P_RIGHT
            progress = min(1.0, observed + GAIN) if right else observed
            pid.update(1.0 - progress, 4.0)
            n += 1
            if progress >= 1.0 or n >= MAX_STEPS:
                break
        steps += n
    return time.process_time() - start, steps


class LoopState(TypedDict):
    """The graph's state: what the four nodes read and write."""

    progress: float
    observed: float
    right: bool
    steps: int
    done: bool


def langgraph_available() -> bool:
    """Whether the peer can run (``langgraph`` installed)."""
    try:
        import langgraph.graph  # noqa: F401
    except ImportError:
        return False
    return True


def build_graph(rng: random.Random, pid: Any) -> Any:
    """The four-phase loop as a compiled LangGraph ``StateGraph``.

    Args:
        rng: The episode's random stream (the noisy expert's draws).
        pid: The episode's PID (``update(error, dt)``).

    Returns:
        The compiled graph; ``invoke`` it with the initial ``LoopState``.
    """
    from langgraph.graph import END, START, StateGraph

    def observe(state: LoopState) -> dict[str, Any]:
        return {"observed": state["progress"]}

    def plan(state: LoopState) -> dict[str, Any]:
        return {"right": rng.random() < P_RIGHT}

    def act(state: LoopState) -> dict[str, Any]:
        p = state["observed"]
        return {"progress": min(1.0, p + GAIN) if state["right"] else p}

    def reflect(state: LoopState) -> dict[str, Any]:
        pid.update(1.0 - state["progress"], 4.0)
        n = state["steps"] + 1
        return {"steps": n, "done": state["progress"] >= 1.0 or n >= MAX_STEPS}

    graph = StateGraph(LoopState)
    for name, node in (("observe", observe), ("plan", plan), ("act", act), ("reflect", reflect)):
        graph.add_node(name, node)
    graph.add_edge(START, "observe")
    graph.add_edge("observe", "plan")
    graph.add_edge("plan", "act")
    graph.add_edge("act", "reflect")
    graph.add_conditional_edges("reflect", lambda s: END if s["done"] else "observe")
    return graph.compile()


def langgraph_steps(episodes: int) -> tuple[float, int]:
    """Run the model as a LangGraph graph, one ``invoke`` per episode: (CPU seconds, steps).

    The graph is compiled per episode outside the timed part (its nodes close
    over the episode's random stream and PID); only ``invoke`` is timed.
    """
    steps, cpu = 0, 0.0
    limit = {"recursion_limit": 4 * MAX_STEPS + 10}  # a super-step per node
    initial: LoopState = {
        "progress": 0.0,
        "observed": 0.0,
        "right": False,
        "steps": 0,
        "done": False,
    }
    for episode in range(episodes):
        app = build_graph(random.Random(episode), _pid())
        start = time.process_time()
        final = app.invoke(dict(initial), config=limit)
        cpu += time.process_time() - start
        steps += final["steps"]
    return cpu, steps
