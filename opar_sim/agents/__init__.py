"""Agents: the simulated noisy expert, a scripted agent for tests, and their protocol."""

from opar_sim.agents.scripted import ScriptedAgent
from opar_sim.agents.simulated import SimulatedAgent, SimulatedAgentParams
from opar_sim.core.agent import ActChoice, Agent

__all__ = ["ActChoice", "Agent", "ScriptedAgent", "SimulatedAgent", "SimulatedAgentParams"]
