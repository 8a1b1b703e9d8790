"""The agent kinds a spec can name (``[agent] kind``), each a factory of agent factories.

``AGENTS.make(kind, params=..., backend=..., evaluator=...)`` validates the
parameters once and returns a function that makes a fresh agent per chunk of
episodes.  The LLM agent's modules are imported only when that kind is made,
so the simulated path never loads an LLM client.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from opar_sim.agents.simulated import SimulatedAgent, SimulatedAgentParams
from opar_sim.core.agent import Agent
from opar_sim.core.registry import Registry
from opar_sim.llm.config import BackendSpec

AgentFactory = Callable[[], Agent]


def simulated(
    params: dict[str, Any],
    backend: BackendSpec | None = None,
    evaluator: BackendSpec | None = None,
) -> AgentFactory:
    """The seeded noisy expert (no model): plans of hidden quality, a biased, noisy self-view.

    Args:
        params: ``SimulatedAgentParams`` fields.
        backend: Ignored (the simulated agent calls no model).
        evaluator: Ignored.

    Returns:
        A function making a fresh agent.
    """
    agent_params = SimulatedAgentParams.model_validate(params)
    return lambda: SimulatedAgent(agent_params)


def llm(
    params: dict[str, Any],
    backend: BackendSpec | None = None,
    evaluator: BackendSpec | None = None,
) -> AgentFactory:
    """A real language model plans, acts and reflects, through an LLM backend.

    Args:
        params: ``LLMAgentParams`` fields.
        backend: The model that plans and acts (default: the embedded llama.cpp model).
        evaluator: The model that reflects (default: ``backend``).

    Returns:
        A function making a fresh agent; its backends are shared.
    """
    from opar_sim.agents.llm import LLMAgent, LLMAgentParams
    from opar_sim.llm.config import make_backend

    llm_params = LLMAgentParams.model_validate(params)
    plan_spec = backend or BackendSpec()
    planner = make_backend(plan_spec)
    judge = make_backend(evaluator) if evaluator is not None else planner
    speeds = (plan_spec.speed(), (evaluator or plan_spec).speed())
    return lambda: LLMAgent(planner, judge, llm_params, *speeds)


AGENTS: Registry[AgentFactory] = Registry("agent")
"""The agent kinds by name."""
AGENTS.register("simulated", simulated)
AGENTS.register("llm", llm)
