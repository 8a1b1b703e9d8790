"""The runtime gate: a tuned Reflect law deciding inside a real agent, whatever its framework.

A host (an agent framework's hook, or any loop) feeds the gate what it sees after each
step (``HostStep``: the tool calls and their arguments, the tools' errors, the tokens
spent, the elapsed time, and a self-evaluation when the law needs one) and gets back a
``Verdict``: CONTINUE, REPLAN or TERMINATE, ``give_up`` and the reason.  The gate builds
what the simulator's loop hands a law (``ReflectContext``: step, ``now``, ``dt``,
``plan_age``, ``replans``) the way the loop builds it, so a law decides in a real agent
exactly as it decided in the simulator on the same sequence of evaluations.

Two things are explicit because hosts differ:

- ``time_unit``: the simulator's ``dt`` is simulated seconds.  ``"step"`` makes every step
  last ``step_seconds`` (use the simulated seconds a step took where the law was tuned);
  ``"seconds"`` uses the host's elapsed wall seconds (then calibrate the simulator to that
  time model before trusting gains that read ``dt``: the PID's I and D do).
- ``replan``: ``"fresh"`` (the host restarts with a fresh context: what the simulator's
  REPLAN models, a new plan paid in full) or ``"nudge"`` (the host keeps the failed context
  and is told to change course).  The gate only carries it; each adapter does what it says.

``give_up`` is on the verdict; a host with no outlet for it (most) ends as on any
TERMINATE, and the record keeps the claim.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from opar_sim.core.controller import Controller, ModelInfo, ReflectContext, Truth, TruthReader
from opar_sim.core.types import ControlSignal, Decision, Evaluation
from opar_sim.runtime.laws import LawError, ToolCall, TraceCounts, TraceLaw, build_law

TimeUnit = Literal["step", "seconds"]
Replan = Literal["fresh", "nudge"]
TIME_UNITS = ("step", "seconds")
REPLANS = ("fresh", "nudge")


@dataclass(frozen=True, slots=True)
class HostStep:
    """What a host saw in one step of its loop (one model turn and the tools it called).

    Attributes:
        calls: The step's tool calls, with their arguments and errors.
        tokens: Tokens (prompt + completion) this step spent.
        elapsed: Host seconds since the run began (None: the gate's own clock).
        evaluation: The self-evaluation, when the host made one (else the gate's evaluator
            is asked, if the law needs one).
        answer: The host's answer so far (what TERMINATE hands over).
        text: What the agent saw (the last message or tool result), for the record.
        plan_exhausted: Whether the host's plan ran out (hosts without plans: False).
        truth: The ground truth, when a harness knows it (a simulated task behind the
            tools): recorded for replay and calibration, never shown to the law.
        expert: Whether the step's call was the expert's (a harness's ground truth too).
        visible_progress: The progress the agent could read from what it saw (a harness's
            measure; calibration compares δ_task with it).
    """

    calls: Sequence[ToolCall] = ()
    tokens: int = 0
    elapsed: float | None = None
    evaluation: Evaluation | None = None
    answer: str = ""
    text: str = ""
    plan_exhausted: bool = False
    truth: Truth | None = None
    expert: bool | None = None
    visible_progress: float | None = None


@dataclass(frozen=True, slots=True)
class Verdict:
    """The gate's decision after a step, with what the host needs to carry it out."""

    signal: ControlSignal
    reason: str
    give_up: bool
    step: int
    replan: Replan
    terms: dict[str, float] = field(default_factory=dict)

    @property
    def fresh_context(self) -> bool:
        """Whether the host should restart its context (a REPLAN under ``fresh``)."""
        return self.signal is ControlSignal.REPLAN and self.replan == "fresh"


class NeedsEvaluation(LawError):
    """The law reads a self-evaluation and neither the host nor an evaluator gave one."""


Evaluator = Callable[["HostStep", Sequence["HostStep"]], Evaluation]
"""Makes the self-evaluation of a step: (the step, the steps before it) -> Evaluation."""


class Gate:
    """A Reflect law run on a host's steps; one episode at a time (``begin`` resets it)."""

    def __init__(
        self,
        law: str | Controller,
        params: Mapping[str, Any] | None = None,
        *,
        time_unit: TimeUnit = "step",
        step_seconds: float = 1.0,
        replan: Replan = "fresh",
        evaluator: Evaluator | None = None,
        recorder: Any = None,
        model: ModelInfo | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """Build the gate.

        Args:
            law: A registered law's name, a trace law (``calls:10``), or a built controller.
            params: The law's parameters (its tuned gains).
            time_unit: ``"step"`` (each step lasts ``step_seconds``) or ``"seconds"``.
            step_seconds: The simulated seconds one step stands for (``time_unit="step"``).
            replan: What a REPLAN does in the host: ``"fresh"`` context or a ``"nudge"``.
            evaluator: Makes the self-evaluation when the law needs one and the host gave none.
            recorder: A ``LiveRecorder`` writing the run directory, or None.
            model: The spec's model, for a law that plans with it (``bayes``).
            clock: Seconds, for ``time_unit="seconds"`` when the host gives no ``elapsed``.

        Raises:
            LawError: for a law that cannot run here, or a bad unit or REPLAN meaning.
        """
        if time_unit not in TIME_UNITS:
            raise LawError(f"time_unit {time_unit!r}: use one of {', '.join(TIME_UNITS)}")
        if replan not in REPLANS:
            raise LawError(f"replan {replan!r}: use one of {', '.join(REPLANS)}")
        if not step_seconds > 0:
            raise LawError(f"step_seconds must be > 0, got {step_seconds}")
        if isinstance(law, str):
            self.law: Controller | TraceLaw = build_law(law, params, model)
        else:
            if isinstance(law, TruthReader):
                raise LawError(f"law {law.name!r} reads the hidden state: no real agent has it")
            self.law = law
        self.params = dict(params or {})
        self.time_unit: TimeUnit = time_unit
        self.step_seconds = step_seconds
        self.replan: Replan = replan
        self.evaluator = evaluator
        self.recorder = recorder
        self.clock = clock
        self.episode = 0
        self._next_episode = 0
        self._reset()

    @property
    def name(self) -> str:
        """The law's name (a trace law as written, e.g. ``calls:10+repeat:3``)."""
        return str(self.law.name)

    @property
    def needs_evaluation(self) -> bool:
        """Whether each step needs a self-evaluation (every law but the trace laws)."""
        return not isinstance(self.law, TraceLaw)

    def begin(self, episode: int | None = None) -> None:
        """Start an episode: the law reset, the counts and the clock from zero.

        Args:
            episode: Its number in the record (default: the next one).
        """
        self.episode = self._next_episode if episode is None else episode
        self._next_episode = self.episode + 1
        self._reset()
        if self.recorder is not None:
            self.recorder.begin(self)

    def _reset(self) -> None:
        """The law reset, the counts and the clock from zero."""
        if not isinstance(self.law, TraceLaw):
            self.law.reset()
        self.counts = TraceCounts()
        self.history: list[HostStep] = []
        self.decisions: list[Decision] = []
        self.started = self.clock()
        self.tokens = 0
        self.last_now: float | None = None
        self.plan_age = 0
        self.replans = 0
        self.fresh = True
        self.last: Verdict | None = None

    def now_of(self, host: HostStep) -> float:
        """The law's clock at this step, in the gate's time unit (simulated seconds)."""
        if self.time_unit == "step":
            return (len(self.history) + 1) * self.step_seconds
        return host.elapsed if host.elapsed is not None else self.clock() - self.started

    def step(self, host: HostStep) -> Verdict:
        """Decide after one host step.

        Args:
            host: What the host saw.

        Returns:
            The verdict (also recorded, when the gate has a recorder).

        Raises:
            NeedsEvaluation: the law reads a self-evaluation and none could be made.
        """
        if self.last is not None and self.last.signal is ControlSignal.TERMINATE:
            raise LawError("the episode was terminated: call begin() for the next one")
        if self.fresh and self.history:  # the step after a REPLAN runs under a new plan
            self.replans += 1
        if self.fresh:
            self.plan_age = 0
        self.plan_age += 1
        self.tokens += max(0, int(host.tokens))
        counts = self.counts.add(host.calls, self.tokens)
        now = self.now_of(host)
        evaluation = host.evaluation
        if isinstance(self.law, TraceLaw):
            decision = self.law.decide(counts)
        else:
            if evaluation is None:
                if self.evaluator is None:
                    raise NeedsEvaluation(
                        f"law {self.name!r} reads a self-evaluation: give the host step one, "
                        "or the gate an evaluator (opar_sim.runtime.selfeval)"
                    )
                evaluation = self.evaluator(host, tuple(self.history))
            ctx = ReflectContext(
                step=len(self.history) + 1,
                now=now,
                dt=0.0 if self.last_now is None else now - self.last_now,
                plan_age=self.plan_age,
                plan_exhausted=host.plan_exhausted,
                replans=self.replans,
            )
            decision = self.law.decide(evaluation, ctx)
        self.last_now = now
        self.history.append(host)
        self.decisions.append(decision)
        self.fresh = decision.signal is ControlSignal.REPLAN
        give_up = decision.give_up and decision.signal is ControlSignal.TERMINATE
        verdict = Verdict(
            decision.signal,
            decision.reason,
            give_up,
            len(self.history),
            self.replan,
            dict(decision.terms),
        )
        self.last = verdict
        if self.recorder is not None:
            self.recorder.step(self, host, evaluation, verdict, now, counts)
        return verdict

    def end(
        self,
        *,
        success: bool | None = None,
        truth: Truth | None = None,
        stopped: str | None = None,
        answer: str | None = None,
    ) -> None:
        """End the episode and record it (a gate without a recorder only forgets it).

        Args:
            success: Whether the host's task was met (its grader), when no truth is known.
            truth: The ground truth at the end (a harness's simulated task).
            stopped: Why the host stopped without a TERMINATE (its own cap:
                ``max_steps``, ``time``, ``tokens``), or None.
            answer: The answer handed over (default: the last step's).
        """
        if self.recorder is not None:
            self.recorder.end(self, success=success, truth=truth, stopped=stopped, answer=answer)
