"""Tasks for opar-sim: partially observable worlds with typed tools.

``environments.make(name, **params)`` builds a registered task;
``check_task`` is the conformance checker every task must pass.
"""

from environments.base import SimTask, Task, ToolParams, ToolSpec
from environments.checker import check_task
from environments.flight_booking import FlightBooking
from environments.registry import describe, make, names, register
from environments.weather import Weather

register("weather", Weather)
register("flight_booking", FlightBooking)

__all__ = [
    "FlightBooking",
    "SimTask",
    "Task",
    "ToolParams",
    "ToolSpec",
    "Weather",
    "check_task",
    "describe",
    "make",
    "names",
    "register",
]
