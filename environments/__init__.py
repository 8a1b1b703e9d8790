"""Tasks for opar-sim: partially observable worlds with typed tools.

``environments.make(name, **params)`` builds a registered task;
``check_task`` is the conformance checker every task must pass.
"""

from environments.base import SimTask, ToolParams
from environments.checker import check_task
from environments.flight_booking import FlightBooking
from environments.plant import Plant
from environments.registry import describe, make, names, register
from environments.research_qa import ResearchQA
from environments.team import Team
from environments.tool_chain import ToolChain
from environments.weather import Weather
from environments.wrappers import wrap, wrapper_names
from opar_sim.core.task import Task, ToolSpec
from opar_sim.core.twin import register_twin

register("weather", Weather)
register("flight_booking", FlightBooking)
register("research_qa", ResearchQA)
register("plant", Plant)
register("team", Team)
register("tool_chain", ToolChain)
# the array twins of the lockstep batch engine, keyed like the tasks (opar_sim.core.twin)
# (imported on first use: the twins compiled by Numba cost half a second to import)
register_twin("flight_booking", "environments.flight_booking_batch:FlightBookingBatch.from_task")
register_twin("research_qa", "environments.research_qa_batch:ResearchQABatch.from_task")
register_twin("weather", "environments.weather_batch:WeatherBatch.from_task")
register_twin("tool_chain", "environments.tool_chain_batch:ToolChainBatch.from_task")

__all__ = [
    "FlightBooking",
    "Plant",
    "ResearchQA",
    "SimTask",
    "Task",
    "Team",
    "ToolChain",
    "ToolParams",
    "ToolSpec",
    "Weather",
    "check_task",
    "describe",
    "make",
    "names",
    "register",
    "wrap",
    "wrapper_names",
]
