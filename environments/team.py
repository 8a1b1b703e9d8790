"""A team of agents: nested OPAR loops (Algorithm 3 of the OPAR document, §7).

Goal
    Get every subtask done by a sub-agent, then combine their answers into
    one ("plan a trip: the flight and the weather").
Tools
    ``delegate(subtask)`` runs a sub-agent's full OPAR episode on that
    subtask inside this Act phase (blocking, Algorithm 3 line 11);
    ``delegate_all()`` starts a sub-agent on every subtask not yet done, all
    together, and waits for all of them (SimPy ``AllOf``); ``combine()``
    merges the sub-agents' answers into the final answer.
Observation
    Which subtasks have come back, and whether their sub-agent *said* it was
    done; not whether the subtask is truly done (a sub-agent's premature stop
    looks like a success from here).
Progress
    ``0.8 × (share of subtasks truly done) + 0.2`` once combined with every
    subtask done.  Combining early gives nothing; a failed subtask must be
    delegated again.
Termination
    Complete when every subtask is truly done and the answers are combined.
Faults
    Whatever the subtasks' own tools do (latency, failures, partial results);
    sub-agents stop prematurely or run out of steps.
Version history
    v0: first version.

Each sub-agent is a simulated agent with its own Reflect controller
(``sub_controller``) and step limit, seeded from this task's generator; the
orchestrator side (``opar_sim.agents.orchestrator``, bound before the episode
runs) runs its loop in this world's clock, and its steps are written to
``steps.jsonl`` under its own agent name (``sub:<subtask>``) with the parent named.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator

from environments.base import NoArgs, SimTask, ToolParams
from environments.registry import make as make_task
from opar_sim.core.task import SubAgentRunner, TaskEvent, ToolSpec
from opar_sim.core.types import (
    Action,
    ActionResult,
    EpisodeResult,
    Observation,
    Outcome,
    PlanStep,
)

# the outcomes of a sub-agent that said TERMINATE claiming its goal (rightly or not); a
# give-up (gave_up, abandoned) is a TERMINATE too, but it says "not done"
CLAIMED_DONE = frozenset(o.value for o in (Outcome.SUCCESS, Outcome.PREMATURE))
GAVE_UP = frozenset(o.value for o in (Outcome.GAVE_UP, Outcome.ABANDONED))


class TeamParams(BaseModel):
    """Parameters of ``team``: the subtasks and the sub-agents' controller and limits."""

    model_config = ConfigDict(extra="forbid")

    subtasks: list[str] = Field(default_factory=lambda: ["weather", "flight_booking"], min_length=1)
    sub_controller: str = "threshold"
    sub_max_steps: int = Field(12, ge=1, le=100)
    sub_token_budget: int = Field(120_000, ge=1)
    tools: ToolParams = ToolParams(latency_median=0.05, latency_sigma=0.2, failure_rate=0.0)

    @field_validator("subtasks")
    @classmethod
    def _known_and_flat(cls, names: list[str]) -> list[str]:
        if "team" in names:
            raise ValueError("a team cannot have a team as a subtask")
        if len(set(names)) != len(names):
            raise ValueError("subtasks must be distinct")
        make_task(names[0])  # raises ValueError naming the known tasks
        for name in names[1:]:
            make_task(name)
        return names


# Tool argument schemas carry no docstring: pydantic would put it in the JSON schema
# sent to the LLM (its "description"), changing the constrained output format.
class DelegateArgs(BaseModel):  # noqa: D101
    model_config = ConfigDict(extra="forbid")
    subtask: str


class Team(SimTask):
    """An orchestrator delegating subtasks to sub-agents, each running its own OPAR loop."""

    name = "team"
    Params = TeamParams
    TOOLS = (
        ToolSpec(
            "delegate",
            "Run a sub-agent on one subtask and wait for it",
            DelegateArgs,
            blocking=True,
        ),
        ToolSpec(
            "delegate_all", "Run sub-agents on every open subtask at once", NoArgs, blocking=True
        ),
        ToolSpec("combine", "Merge the sub-agents' answers into the final answer", NoArgs),
    )
    params: TeamParams

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self.goal = "Get " + ", ".join(self.params.subtasks) + " done by sub-agents; combine."
        self.runner: SubAgentRunner | None = None
        self._clear()

    def _clear(self) -> None:
        self.done: dict[str, bool] = {}  # subtask -> truly done
        self.claimed: dict[str, bool] = {}  # subtask -> the sub-agent claimed it done
        self.gave_up: dict[str, bool] = {}  # subtask -> the sub-agent gave up on it
        self.answers: dict[str, str] = {}
        self.combined = False
        self._subs: list[EpisodeResult] = []
        self._launched = 0

    def _reset_world(self) -> None:
        self._clear()

    @property
    def sub_episodes(self) -> Sequence[EpisodeResult]:
        """The sub-agents' episodes of this episode, in launch order."""
        return self._subs

    # -- tools ---------------------------------------------------------------
    def execute(self, action: Action) -> TaskEvent:
        """Run a call; ``delegate`` and ``delegate_all`` block on sub-agents' whole episodes.

        Delegation has no tool latency or failure of its own: the result's latency
        is the simulated time the sub-episodes took.  ``combine`` runs as a plain tool.
        """
        if action.tool == "delegate":
            subtask = str(action.arg("subtask"))
            if subtask not in self.params.subtasks:
                return ActionResult(False, f"no subtask {subtask!r}", 0.0, "invalid_action")
            start = self.env.now
            yield self.env.process(self._run_sub(subtask))
            return self._report([subtask], self.env.now - start)
        if action.tool == "delegate_all":
            open_ = [s for s in self.params.subtasks if not self.claimed.get(s)]
            start = self.env.now
            if open_:
                yield self.env.all_of([self.env.process(self._run_sub(s)) for s in open_])
            return self._report(open_, self.env.now - start)
        result = yield from super().execute(action)
        return result

    def bind_sub_agents(self, runner: SubAgentRunner) -> None:
        """Receive the orchestrator's sub-agent runner (``opar_sim.agents.orchestrator``)."""
        self.runner = runner

    def _run_sub(self, subtask: str) -> Any:
        """Algorithm 3, line 11: S_i.OPAR_EXECUTE(subtask), in this world's clock."""
        if self.runner is None:
            raise RuntimeError("team: no sub-agent runner bound (bind_sub_agents)")
        seed = np.random.SeedSequence(int(self.rng.integers(2**63)))
        self._launched += 1
        result = yield from self.runner.run(
            self.env,
            make_task(subtask),
            controller=self.params.sub_controller,
            max_steps=self.params.sub_max_steps,
            token_budget=self.params.sub_token_budget,
            seed=seed,
            episode=self._launched,
            name=f"sub:{subtask}",
        )
        self._subs.append(result)
        self.done[subtask] = result.complete
        self.claimed[subtask] = result.outcome in CLAIMED_DONE
        self.gave_up[subtask] = result.outcome in GAVE_UP
        self.answers[subtask] = result.answer
        return result

    def _report(self, subtasks: Sequence[str], latency: float) -> ActionResult:
        parts = [f"{s}: {self._status(s)} ({self.answers.get(s, '')})" for s in subtasks]
        return ActionResult(True, "; ".join(parts) or "nothing to delegate", latency, tokens=20)

    def _status(self, subtask: str) -> str:
        if self.claimed.get(subtask):
            return "done"
        return "gave up" if self.gave_up.get(subtask) else "not done"

    def _apply(self, action: Action) -> ActionResult:  # only combine reaches here
        self.combined = all(self.claimed.get(s) for s in self.params.subtasks)
        if not self.combined:
            return ActionResult(False, "some subtasks have no answer yet", 0.0, "rejected")
        return ActionResult(True, self.answer(), 0.0, tokens=30)

    # -- ground truth and what the orchestrator sees ---------------------------
    @property
    def progress(self) -> float:
        """Ground-truth progress: 0.8 × the share of subtasks truly done, +0.2 once combined."""
        n = len(self.params.subtasks)
        truly = sum(self.done.get(s, False) for s in self.params.subtasks) / n
        return 0.8 * truly + (0.2 if self.combined and truly == 1.0 else 0.0)

    @property
    def complete(self) -> bool:
        """Whether every subtask is truly done and the answers are combined."""
        return self.progress >= 1.0 - 1e-9

    def observe(self) -> Observation:
        """Which subtasks' sub-agents said they were done, and whether the answers are combined.

        Its visible progress trusts those claims, so a premature stop looks like success.
        """
        n = len(self.params.subtasks)
        said = sum(self.claimed.get(s, False) for s in self.params.subtasks) / n
        visible = 0.8 * said + (0.2 if self.combined and said == 1.0 else 0.0)
        text = " ".join(f"{s}:{int(self.claimed.get(s, False))}" for s in self.params.subtasks)
        return Observation(f"{text} combined:{int(self.combined)}", visible, tokens=20)

    # -- the expert ------------------------------------------------------------
    def expert_action(self) -> Action:
        """Delegate the first subtask not truly done; with all done, combine."""
        for subtask in self.params.subtasks:
            if not self.done.get(subtask):
                return Action.of("delegate", subtask=subtask)
        return Action.of("combine")

    def wrong_actions(self) -> Sequence[Action]:
        """Redo a finished subtask, or combine before every answer is in."""
        finished = [s for s in self.params.subtasks if self.done.get(s)]
        wrong = [Action.of("delegate", subtask=s) for s in finished]  # redo finished work
        if not self.combined:
            wrong.append(Action.of("combine"))  # combine before every answer is in
        return wrong

    def plan_template(self) -> tuple[PlanStep, ...]:
        """Delegate each subtask in turn, then combine; redelegate what came back unfinished."""
        steps = [PlanStep("delegate", f"delegate {s} to a sub-agent") for s in self.params.subtasks]
        steps.append(
            PlanStep(
                "combine",
                "combine the answers",
                condition="a subtask came back unfinished",
                fallback="delegate it again",
            )
        )
        return tuple(steps)

    def answer(self) -> str:
        """The sub-agents' answers, one per subtask, or "no answers yet"."""
        if not self.answers:
            return "no answers yet"
        return "; ".join(f"{s}: {a}" for s, a in self.answers.items())
