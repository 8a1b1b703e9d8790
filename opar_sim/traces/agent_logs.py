"""τ²-bench results and SWE-agent trajectories as recorded runs.

τ²-bench (``tau2``): a results file (``{"info", "tasks", "simulations": [...]}``), a list of
simulation runs, or one.  A simulation's ``messages`` are OpenAI-like (assistant
``tool_calls`` as ``{id, name, arguments}``; tool messages with ``id`` and ``error``);
each assistant message is a turn with its ``usage`` (``prompt_tokens``,
``completion_tokens``).  Calls a simulated *user* makes (``requestor: user``) are not the
agent's and are left out.  The outcome: ``reward_info.reward`` 1 after a normal stop is a
success, below 1 a failure; any other ``termination_reason`` maps as ``TAU2_STOPS`` says.

SWE-agent (``swe-agent``): a ``.traj`` file (or a list of them): each ``trajectory`` entry
is a turn with one call, the command of its ``action`` (the first word is the tool, the rest
its arguments).  Tokens are per run only (``info.model_stats``: ``tokens_sent``,
``tokens_received``), so the steps' tokens are a text estimate.  ``info.exit_status`` maps
as ``SWE_AGENT_STOPS`` says; a ``submitted`` run's patch is judged by a later evaluation the
trajectory does not hold, so its outcome is ``unknown``.
"""

from __future__ import annotations

from typing import Any

from opar_sim.traces.chat import Msg, turns_of
from opar_sim.traces.runs import (
    Call,
    TraceFormatError,
    TraceRun,
    Turn,
    count,
    items,
    obj,
    seconds,
    text_chars,
    trial_number,
)

TAU2_STOPS = {
    "user_stop": None,  # a normal end: the reward decides
    "agent_stop": None,
    "max_steps": "truncated:max_steps",
    "timeout": "truncated:time",
    "too_many_errors": "truncated:too_many_errors",
    "context_window_exceeded": "truncated:context",
    "agent_error": "error:agent_error",
    "user_error": "error:user_error",
    "infrastructure_error": "error:infrastructure_error",
    "unexpected_error": "error:unexpected_error",
}
SWE_AGENT_STOPS = {
    "submitted": "unknown",
    "exit_cost": "truncated:cost",
    "exit_context": "truncated:context",
    "exit_format": "error:invalid_format",
    "exit_api": "error:backend_unavailable",
    "exit_environment_error": "error:environment",
    "exit_error": "error:exit_error",
    "exit_forfeit": "failure",
    "exit_command": "failure",  # the agent ran ``exit`` without a submission
    "exit_total_execution_time": "truncated:time",
    "exit_command_timeout": "truncated:command_timeout",
    "early_exit": "error:early_exit",
}


def _tau2_message(message: Any) -> Msg:
    if not isinstance(message, dict):
        return Msg("other")
    role = str(message.get("role"))
    content = message.get("content")
    chars = text_chars(content)
    if role == "tool":
        if message.get("requestor") == "user":
            return Msg("other")
        return Msg(
            "tool",
            chars,
            reply_to=message.get("id"),
            error="error" if message.get("error") else None,
        )
    msg = Msg(role, chars)
    if role != "assistant":
        return msg
    for call in items(message.get("tool_calls")):
        if not isinstance(call, dict) or call.get("requestor", "assistant") != "assistant":
            continue
        name = call.get("name")
        if not isinstance(name, str) or not name:
            raise TraceFormatError("tool_calls: a call without a name")
        msg.calls.append((call.get("id"), Call(name, call.get("arguments"))))
        msg.chars += len(name) + len(str(call.get("arguments") or ""))
    usage = message.get("usage")
    if isinstance(usage, dict):
        msg.prompt_tokens = count(usage.get("prompt_tokens"))
        msg.completion_tokens = count(usage.get("completion_tokens"))
    return msg


def _reward(simulation: dict[str, Any]) -> float | None:
    info = simulation.get("reward_info")
    value = info.get("reward") if isinstance(info, dict) else None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return min(max(float(value), 0.0), 1.0) if value == value else None


def _tau2_run(index: int, simulation: Any, agent: str | None, task: str | None) -> TraceRun:
    if not isinstance(simulation, dict):
        raise TraceFormatError(f"simulation {index}: must be a JSON object")
    task_id = simulation.get("task_id")
    if not isinstance(task_id, str | int) or isinstance(task_id, bool):
        raise TraceFormatError(f"simulation {index}: task_id: missing")
    messages = simulation.get("messages")
    if not isinstance(messages, list):
        raise TraceFormatError(f"simulation {index} (task {task_id}): messages: missing")
    try:
        turns = turns_of([_tau2_message(m) for m in messages])
    except TraceFormatError as exc:
        raise TraceFormatError(f"simulation {index} (task {task_id}): {exc}") from None
    stop = simulation.get("termination_reason")
    reward = _reward(simulation)
    outcome = TAU2_STOPS.get(stop) if isinstance(stop, str) else None
    if outcome is None:
        if isinstance(stop, str) and stop not in TAU2_STOPS:
            outcome = "error:" + "".join(ch for ch in stop[:40] if ch.isalnum() or ch == "_")
        elif reward is None:
            outcome = "unknown"
        else:
            outcome = "success" if reward >= 1.0 - 1e-6 else "failure"
    trial = simulation.get("trial")
    return TraceRun(
        str(task_id),
        turns,
        outcome,
        stop if isinstance(stop, str) else None,
        reward,
        wall_seconds=seconds(simulation.get("duration")),
        agent=agent,
        task=task,
        trial=trial_number(trial, 1),
    )


def tau2_runs(doc: Any) -> list[TraceRun]:
    """The simulations of a τ²-bench results file."""
    agent = task = None
    simulations: Any = doc
    if isinstance(doc, dict) and "simulations" in doc:
        simulations = doc["simulations"]
        info = obj(doc.get("info"))
        agent_info = obj(info.get("agent_info"))
        env = obj(info.get("environment_info"))
        agent = agent_info.get("llm") if isinstance(agent_info.get("llm"), str) else None
        domain = env.get("domain_name")
        task = f"tau2/{domain}" if isinstance(domain, str) else None
    elif isinstance(doc, dict):
        simulations = [doc]
    if not isinstance(simulations, list) or not simulations:
        raise TraceFormatError("simulations: missing or empty")
    return [_tau2_run(k, s, agent, task) for k, s in enumerate(simulations)]


def _swe_turn(index: int, entry: Any) -> Turn:
    if not isinstance(entry, dict):
        raise TraceFormatError(f"trajectory[{index}]: must be an object")
    action = entry.get("action")
    if not isinstance(action, str):
        raise TraceFormatError(f"trajectory[{index}].action: must be text")
    chars = sum(text_chars(entry.get(k)) for k in ("thought", "action", "observation"))
    command = action.strip()
    calls = []
    if command:
        name, _, rest = command.partition(" ")
        head = name.split("\n")[0]
        rest = command[len(head) :].strip()
        calls.append(Call(head[:200], rest, None, seconds(entry.get("execution_time"))))
    return Turn(calls, None, None, chars, 1)


def swe_agent_runs(doc: Any) -> list[TraceRun]:
    """The runs of one SWE-agent trajectory file (or a list of them)."""
    records = doc if isinstance(doc, list) else [doc]
    runs = []
    for index, record in enumerate(records):
        if not isinstance(record, dict) or not isinstance(record.get("trajectory"), list):
            raise TraceFormatError(f"run {index}: trajectory: missing (a list)")
        info = obj(record.get("info"))
        turns = [_swe_turn(k, e) for k, e in enumerate(record["trajectory"])]
        status = info.get("exit_status")
        outcome = "unknown"
        if isinstance(status, str):
            inner = status
            if status.startswith("submitted (") and status.endswith(")"):
                inner = status[len("submitted (") : -1]  # autosubmitted after a limit
            outcome = SWE_AGENT_STOPS.get(inner, "unknown")
        stats = obj(info.get("model_stats"))
        times = [c.seconds for t in turns for c in t.calls if c.seconds is not None]
        env = record.get("environment")
        run_id = info.get("instance_id") or record.get("instance_id") or env or f"run{index}"
        runs.append(
            TraceRun(
                str(run_id),
                turns,
                outcome,
                status if isinstance(status, str) else None,
                wall_seconds=sum(times) if times else None,
                prompt_tokens=count(stats.get("tokens_sent")),
                completion_tokens=count(stats.get("tokens_received")),
            )
        )
    return runs
