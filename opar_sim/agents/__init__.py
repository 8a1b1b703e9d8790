"""Agents: the simulated noisy expert, a scripted agent for tests, and their protocol."""

from opar_sim.agents.base import ActChoice, Agent
from opar_sim.agents.scripted import ScriptedAgent
from opar_sim.agents.simulated import SimulatedAgent, SimulatedAgentParams

__all__ = ["ActChoice", "Agent", "ScriptedAgent", "SimulatedAgent", "SimulatedAgentParams"]
