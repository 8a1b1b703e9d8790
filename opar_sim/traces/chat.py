"""A conversation's messages, however a format spells them, into assistant turns.

Each log format (τ²-bench, Inspect, SWE-agent's history) turns its messages into ``Msg``
records; ``turns_of`` makes one ``Turn`` per assistant message with its tool calls, and
finds each call's reply among the tool messages that follow (by call id there, else the
first unanswered one in order) to learn whether it failed.  Tool replies with no assistant
message before them (a log that kept the replies and not the request) form one turn of
their own, so their calls and errors are not lost.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from opar_sim.traces.runs import Call, Pending, Turn


@dataclass(slots=True)
class Msg:
    """One message, as the turn builder needs it."""

    role: str  # system, user, assistant, tool (anything else is skipped)
    chars: int = 0  # the text's characters (content and call arguments)
    calls: list[tuple[Any, Call]] = field(default_factory=list)  # (call id, call): assistant
    reply_to: Any = None  # a tool message: the id of the call it answers
    name: str | None = None  # a tool message: the tool's name, when it says
    error: str | None = None  # a tool message: the error's kind, None when it succeeded
    prompt_tokens: int | None = None  # an assistant message: its model call's usage
    completion_tokens: int | None = None


def _answer(pending: Pending, message: Msg) -> None:
    """Mark the call ``message`` answers: by id, else the first unanswered one."""
    call = pending.take(message.reply_to, None)
    if call is None:  # more replies than calls: a call whose request was not kept
        pending.add(Call(message.name or "unknown", None, message.error))
    else:
        call.error = message.error


def turns_of(messages: list[Msg]) -> list[Turn]:
    """One turn per assistant message (and per run of replies with no request before them).

    Args:
        messages: The conversation in order.

    Returns:
        The turns, each with its calls (errors from their replies), its share of the
        conversation's characters and the user messages before it.
    """
    turns: list[Turn] = []
    chars = 0
    users = 0
    current: Turn | None = None
    pending = Pending(Turn(), [])
    orphan = False
    for message in messages:
        if message.role == "system":
            continue
        chars += message.chars
        if message.role == "user":
            users += 1
            current = None  # a tool reply after a user message has no request in view
        elif message.role == "assistant":
            current = Turn(
                [call for _, call in message.calls],
                message.prompt_tokens,
                message.completion_tokens,
                chars,
                users,
            )
            chars = 0
            orphan = False
            pending = Pending(current, [call_id for call_id, _ in message.calls])
            turns.append(current)
        elif message.role == "tool":
            if current is None:
                current = Turn([], None, None, 0, users)
                pending = Pending(current, [])
                turns.append(current)
                orphan = True
            if orphan:  # replies with no request in view: they are the turn's own text
                current.chars += chars
                chars = 0
            _answer(pending, message)
    return turns
