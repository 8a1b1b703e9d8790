"""smolagents: the gate as a step callback and a final-answer check.

After each ``ActionStep`` the callback reads its tool calls and arguments, its error (a
tool's failure), its observations and ``token_usage``; a final answer is first put to
the check, which asks the gate.  Answers:

- CONTINUE: nothing; on a final answer the check fails, so smolagents logs it as the
  step's error and goes on: the veto of a premature stop;
- REPLAN: ``"nudge"`` appends the instruction to the step's observations (the model
  reads it next turn); ``"fresh"`` also drops every earlier step from memory and the
  step's own call, keeping the task: smolagents' own replanning is ``planning_interval``
  only, on a fixed schedule;
- TERMINATE: the run ends through smolagents' own exit at ``max_steps``, which writes a
  final answer from memory with one more model call (``interrupt()`` would raise and lose
  the answer); on a final answer the check passes and the answer is kept.

Cannot: give up natively; the TERMINATE exit needs the agent's ``max_steps`` to be the
run's (``agent.run(task)`` without another ``max_steps``) and costs that model call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from smolagents.memory import ActionStep, TaskStep

from opar_sim.core.types import ControlSignal
from opar_sim.runtime.gate import Gate, HostStep, Verdict
from opar_sim.runtime.laws import ToolCall

REPLAN_PROMPT = (
    "Your approach is not reaching the goal ({reason}). Make a new plan and try a different way."
)
FINAL_ANSWER = "final_answer"


def host_step(step: ActionStep) -> HostStep:
    """What the gate sees of one action step."""
    error = str(step.error) if step.error is not None else None
    made = [(c.name, c.arguments) for c in step.tool_calls or []]
    message = step.model_output_message
    if not made and message is not None:  # a call that failed before it was logged
        made = [(c.function.name, c.function.arguments) for c in message.tool_calls or []]
    calls = []
    for i, (name, arguments) in enumerate(made):
        args = arguments if isinstance(arguments, dict) else {"input": arguments}
        text = None if step.observations is None else str(step.observations)
        calls.append(ToolCall(name, args, error if i == 0 else None, text))
    usage = step.token_usage
    tokens = int(usage.input_tokens + usage.output_tokens) if usage is not None else 0
    answer = "" if step.action_output is None else str(step.action_output)
    return HostStep(calls=calls, tokens=tokens, answer=answer, text=str(step.observations or ""))


class GateCallbacks:
    """``step_callbacks`` and ``final_answer_checks`` entries deciding with a gate."""

    def __init__(
        self, gate: Gate, observe: Callable[[ActionStep | None, HostStep], HostStep] | None = None
    ) -> None:
        """Build them.

        Args:
            gate: The gate (the caller calls ``gate.begin()`` for each run).
            observe: Adds what the host step lacks (a harness's ground truth), or None.
        """
        self.gate = gate
        self.observe = observe
        self.pending: Verdict | None = None  # a final answer's verdict, for its step

    def check(self, final_answer: Any, memory: Any, agent: Any = None) -> bool:
        """The final-answer check: the gate decides on the answer (False vetoes it)."""
        host = HostStep(answer=str(final_answer), text=str(final_answer))
        if self.observe is not None:
            host = self.observe(None, host)  # a final answer: no action step yet
        self.pending = self.gate.step(host)
        return self.pending.signal is ControlSignal.TERMINATE

    def step(self, memory_step: Any, agent: Any = None) -> None:
        """The step callback: decide on an action step and carry the verdict out."""
        if not isinstance(memory_step, ActionStep) or agent is None:
            return
        verdict, self.pending = self.pending, None
        if verdict is None:
            if memory_step.error is not None and "max steps" in str(memory_step.error):
                return  # smolagents' own last step (its final answer): nothing to decide
            host = host_step(memory_step)
            if self.observe is not None:
                host = self.observe(memory_step, host)
            verdict = self.gate.step(host)
        elif verdict.signal is ControlSignal.TERMINATE:
            return  # the final answer passed the check: the run ends with it
        if verdict.signal is ControlSignal.TERMINATE:
            agent.step_number = agent.max_steps  # the loop's own exit: a final answer
        elif verdict.signal is ControlSignal.REPLAN:
            prompt = REPLAN_PROMPT.format(reason=verdict.reason)
            if verdict.fresh_context:
                agent.memory.steps[:] = [s for s in agent.memory.steps if isinstance(s, TaskStep)]
                memory_step.model_output = None
                memory_step.tool_calls = None
                memory_step.error = None
                memory_step.observations = prompt
            else:
                seen = memory_step.observations or ""
                memory_step.observations = f"{seen}\n{prompt}".strip()
