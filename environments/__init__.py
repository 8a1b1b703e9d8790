"""Tasks for opar-sim: partially observable worlds with typed tools.

``environments.make(name, **params)`` builds a registered task;
``check_task`` is the conformance checker every task must pass.
"""

from environments.base import SimTask, ToolParams
from environments.checker import check_task
from environments.flight_booking import FlightBooking
from environments.flight_booking_batch import FlightBookingBatch
from environments.plant import Plant
from environments.registry import describe, make, names, register
from environments.research_qa import ResearchQA
from environments.research_qa_batch import ResearchQABatch
from environments.team import Team
from environments.tool_chain import ToolChain
from environments.tool_chain_batch import ToolChainBatch
from environments.weather import Weather
from environments.weather_batch import WeatherBatch
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
register_twin("flight_booking", FlightBookingBatch.from_task)
register_twin("research_qa", ResearchQABatch.from_task)
register_twin("weather", WeatherBatch.from_task)
register_twin("tool_chain", ToolChainBatch.from_task)

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
