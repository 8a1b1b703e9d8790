"""The LLMBackend protocol, its typed errors, and the one override point of a backend.

A backend turns chat messages into a validated pydantic object: the object's
JSON schema is sent as structured output (Ollama's ``format``, llama.cpp's
grammar), the reply is parsed and validated, and JSON that fails validation
is retried once with the validation error in the prompt.  Subclasses of
``BackendBase`` override only ``generate`` (messages and a JSON schema in,
raw text and metrics out), the way smolagents' models override one method.
"""

from __future__ import annotations

import json
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from pydantic import BaseModel, ValidationError

Message = dict[str, str]
JsonSchema = dict[str, Any]
T = TypeVar("T", bound=BaseModel)


class LLMError(Exception):
    """A backend failure, with the episode outcome reason it maps to and what to do."""

    reason = "backend_error"


class BackendUnavailable(LLMError):
    """The backend cannot be reached or cannot serve the model: the episode cannot go on."""

    reason = "backend_unavailable"


class ModelMissing(BackendUnavailable):
    """The server is up but does not have the model."""


class BackendTimeout(LLMError):
    """The backend did not answer within the timeout."""

    reason = "backend_timeout"


class BackendHTTPError(LLMError):
    """The server answered with an error status or an error line."""

    reason = "backend_error"


class InvalidOutput(LLMError):
    """The reply was not JSON matching the schema (or was cut off by the token limit)."""

    reason = "invalid_format"


@dataclass(slots=True, frozen=True)
class Completion:
    """One raw generation: the text and what it cost.

    ``model_seconds`` is the duration the backend reports (Ollama's
    ``total_duration``); ``wall_seconds`` is measured around the call.
    ``done_reason`` is ``"stop"`` or ``"length"`` (truncated by the token limit).
    """

    text: str
    prompt_tokens: int
    completion_tokens: int
    model_seconds: float
    wall_seconds: float = 0.0
    done_reason: str = "stop"

    @property
    def truncated(self) -> bool:
        return self.done_reason == "length"


@dataclass(slots=True)
class Reply(Generic[T]):
    """The outcome of a structured call: the value (None when invalid) and every attempt."""

    value: T | None
    attempts: list[Completion] = field(default_factory=list)
    error: str | None = None  # the last validation problem when value is None

    @property
    def prompt_tokens(self) -> int:
        return sum(c.prompt_tokens for c in self.attempts)

    @property
    def completion_tokens(self) -> int:
        return sum(c.completion_tokens for c in self.attempts)

    @property
    def model_seconds(self) -> float:
        return sum(c.model_seconds for c in self.attempts)

    @property
    def wall_seconds(self) -> float:
        return sum(c.wall_seconds for c in self.attempts)


class LLMBackend(Protocol):
    """Messages in, a validated pydantic object out."""

    name: str
    model: str

    def chat(
        self,
        messages: Sequence[Message],
        schema: type[T],
        *,
        json_schema: JsonSchema | None = None,
        seed: int | None = None,
    ) -> Reply[T]:
        """Ask for an object of ``schema`` (``json_schema`` overrides the schema sent).

        Raises an ``LLMError`` other than ``InvalidOutput`` when the backend fails;
        invalid output is returned as a Reply with ``value`` None.
        """
        ...


def parse_reply(text: str, schema: type[T]) -> T:
    """Parse and validate a reply; raise InvalidOutput saying what was wrong."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidOutput(f"not valid JSON ({exc.msg} at char {exc.pos})") from None
    try:
        return schema.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "reply"
        raise InvalidOutput(f"{where}: {err['msg']}") from None


def retry_message(problem: str) -> Message:
    """The user turn that asks for a corrected reply."""
    return {
        "role": "user",
        "content": f"Your reply was invalid: {problem}. Reply again with JSON matching the "
        "schema exactly, and nothing else.",
    }


class BackendBase(ABC):
    """Shared structured-output logic; subclasses override ``generate`` only."""

    name = "base"

    def __init__(self, model: str) -> None:
        self.model = model

    @abstractmethod
    def generate(
        self, messages: Sequence[Message], json_schema: JsonSchema, seed: int | None
    ) -> Completion:
        """One generation constrained to ``json_schema``; raise LLMError on failure."""

    def chat(
        self,
        messages: Sequence[Message],
        schema: type[T],
        *,
        json_schema: JsonSchema | None = None,
        seed: int | None = None,
    ) -> Reply[T]:
        sent = json_schema if json_schema is not None else schema.model_json_schema()
        reply: Reply[T] = Reply(None)
        convo = list(messages)
        for attempt in range(2):  # one retry with the validation error in the prompt
            started = time.perf_counter()
            completion = self.generate(convo, sent, None if seed is None else seed + attempt)
            if not completion.wall_seconds:
                completion = _with_wall(completion, time.perf_counter() - started)
            reply.attempts.append(completion)
            try:
                if completion.truncated:
                    raise InvalidOutput(
                        f"output cut off at {completion.completion_tokens} tokens "
                        "(done_reason=length); raise num_predict"
                    )
                reply.value = parse_reply(completion.text, schema)
                reply.error = None
                return reply
            except InvalidOutput as exc:
                reply.error = str(exc)
                convo = [*convo, {"role": "assistant", "content": completion.text}]
                convo.append(retry_message(str(exc)))
        return reply


def _with_wall(c: Completion, wall: float) -> Completion:
    return Completion(
        c.text, c.prompt_tokens, c.completion_tokens, c.model_seconds, wall, c.done_reason
    )
