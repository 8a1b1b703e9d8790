"""The LLMBackend protocol, its typed errors, and what a call returns."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from pydantic import BaseModel

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


MAX_TOKENS = 10**9  # a reply's token counts are clamped to [0, MAX_TOKENS]
MAX_SECONDS = 1e6  # and its durations to [0, MAX_SECONDS]


def _clamp(value: object, top: float) -> float:
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        return 0.0
    if math.isnan(number):
        return 0.0
    return min(max(number, 0.0), top)


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

    def __post_init__(self) -> None:
        # a server's numbers are data: a negative, huge, non-finite or non-numeric count or
        # duration is clamped into range rather than crashing the loop or the JSON lines
        for name, top in (("prompt_tokens", MAX_TOKENS), ("completion_tokens", MAX_TOKENS)):
            object.__setattr__(self, name, int(_clamp(getattr(self, name), top)))
        for name in ("model_seconds", "wall_seconds"):
            object.__setattr__(self, name, float(_clamp(getattr(self, name), MAX_SECONDS)))
        if not isinstance(self.text, str):
            object.__setattr__(self, "text", str(self.text))
        if self.done_reason not in ("stop", "length"):
            object.__setattr__(self, "done_reason", "stop")

    @property
    def truncated(self) -> bool:
        """Whether the generation was cut off by the token limit (``done_reason`` "length")."""
        return self.done_reason == "length"


@dataclass(slots=True)
class Reply(Generic[T]):
    """The outcome of a structured call: the value (None when invalid) and every attempt."""

    value: T | None
    attempts: list[Completion] = field(default_factory=list)
    error: str | None = None  # the last validation problem when value is None

    @property
    def prompt_tokens(self) -> int:
        """Prompt tokens summed over every attempt, retries included."""
        return sum(c.prompt_tokens for c in self.attempts)

    @property
    def completion_tokens(self) -> int:
        """Completion tokens summed over every attempt, retries included."""
        return sum(c.completion_tokens for c in self.attempts)

    @property
    def model_seconds(self) -> float:
        """The backend-reported generation time summed over every attempt."""
        return sum(c.model_seconds for c in self.attempts)

    @property
    def wall_seconds(self) -> float:
        """The wall-clock time measured around every attempt, summed."""
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
