"""The spec's ``[guards]`` table: which convergence guards a run turns on, with what limits.

Schema only: the guards themselves (and their registry, ``GUARDS``) are the
kernel's (``opar_sim.core.guards``); ``GuardsSpec.supervisor`` builds them
from the table.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from opar_sim.core.guards import GUARDS
from opar_sim.core.supervisor import Guard, Supervisor


class HumanGateSpec(BaseModel):
    """``human = {latency = 30.0, error_rate = 0.05}``."""

    model_config = ConfigDict(extra="forbid")

    latency: float = Field(30.0, ge=0, allow_inf_nan=False, description="simulated s per review")
    error_rate: float = Field(0.05, ge=0, le=1, description="chance a verdict is wrong")
    bad_plan: float = Field(0.5, ge=0, le=1, description="plan quality a human calls bad")


class DetectorsSpec(BaseModel):
    """``detectors = {same_call = 3, stall = 3, ...}``: each detector's threshold; off if left out.

    A detector that fires turns a CONTINUE into a REPLAN (``opar_sim.core.detectors``).
    """

    model_config = ConfigDict(extra="forbid")

    same_call: int | None = Field(None, ge=2, description="identical calls in a row")
    pattern: int | None = Field(None, ge=3, description="length of an a→b→a→b alternation")
    stall: int | None = Field(None, ge=1, description="Magentic-One's stall count")
    near_identical: int | None = Field(None, ge=2, description="near-identical rounds in a row")
    cusum: float | None = Field(None, gt=0, allow_inf_nan=False, description="lower CUSUM of Δδ")
    integral: float | None = Field(
        None, gt=0, allow_inf_nan=False, description="Σ (1 − δ_task)·dt over the plan"
    )

    def enabled(self) -> list[tuple[str, dict[str, Any]]]:
        """(detector name, its parameters) of each detector turned on, in table order."""
        return [
            (name, {"threshold": value})
            for name, value in self.model_dump().items()
            if value is not None
        ]


class GuardsSpec(BaseModel):
    """The spec's ``[guards]`` table; a guard left out is off."""

    model_config = ConfigDict(extra="forbid")

    confirm: int | None = Field(
        None, ge=1, description="TERMINATE only on this many consecutive completion claims"
    )
    max_iterations: int | None = Field(None, ge=1, description="stop after this many Reflects")
    time_budget: float | None = Field(None, gt=0, allow_inf_nan=False, description="simulated s")
    token_budget: int | None = Field(None, ge=1, description="prompt + completion tokens")
    token_spike: float | None = Field(
        None, gt=1, allow_inf_nan=False, description="stop when a step spends > this × mean"
    )
    no_improvement: int | None = Field(None, ge=1, description="Reflects without a better δ_task")
    repeat: bool = Field(False, description="REPLAN, then stop as stuck, on repeated action+result")
    repeat_persist: int = Field(1, ge=1, description="repeats after the forced REPLAN before stuck")
    detectors: DetectorsSpec | None = Field(None, description="stall and loop detectors (REPLAN)")
    confidence: float | None = Field(None, ge=0, le=1, description="TERMINATE at this confidence")
    human: HumanGateSpec | None = Field(None, description="approver on TERMINATE and REPLAN")

    def guards(self) -> list[Guard]:
        """The guards this table turns on, in the order of ``enabled``."""
        made: list[Guard] = []
        for name, params in self.enabled():
            made.append(GUARDS.make(name, **params))
        return made

    def enabled(self) -> list[tuple[str, dict[str, Any]]]:
        """(registered guard name, its parameters) of each guard the table turns on, in order.

        The order is the order of review (``Supervisor``): the stop
        confirmation first, so it reads the controller's own decision; then the
        stopping rules, the stuck detector, the stall detectors and the confidence stop; the human
        gate last, reviewing what the others left.

        Returns:
            The enabled guards' names and constructor parameters.
        """
        on: list[tuple[str, dict[str, Any]]] = []
        if self.confirm is not None:
            on.append(("confirm", {"k": self.confirm}))
        if self.max_iterations is not None:
            on.append(("max_iterations", {"limit": self.max_iterations}))
        if self.time_budget is not None:
            on.append(("time_budget", {"seconds": self.time_budget}))
        if self.token_budget is not None:
            on.append(("token_budget", {"tokens": self.token_budget}))
        if self.token_spike is not None:
            on.append(("token_spike", {"factor": self.token_spike}))
        if self.no_improvement is not None:
            on.append(("no_improvement", {"patience": self.no_improvement}))
        if self.repeat:
            on.append(("repeat", {"persist": self.repeat_persist}))
        if self.detectors is not None:
            on += self.detectors.enabled()
        if self.confidence is not None:
            on.append(("confidence", {"threshold": self.confidence}))
        if self.human is not None:
            on.append(("human", self.human.model_dump()))
        return on

    def supervisor(self) -> Supervisor | None:
        """A Supervisor over these guards, or None when the table turns none on."""
        guards = self.guards()
        return Supervisor(guards) if guards else None
