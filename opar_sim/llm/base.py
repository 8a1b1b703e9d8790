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

from pydantic import ValidationError

from opar_sim.core.llm import Completion, InvalidOutput, JsonSchema, Message, Reply, T


def parse_reply(text: str, schema: type[T]) -> T:
    """Parse and validate a reply; raise InvalidOutput saying what was wrong."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidOutput(f"not valid JSON ({exc.msg} at char {exc.pos})") from None
    except RecursionError:
        raise InvalidOutput("JSON nested too deeply") from None
    if not isinstance(data, dict):
        raise InvalidOutput(f"reply: expected a JSON object, got {type(data).__name__}")
    try:
        return schema.model_validate(data)
    except RecursionError:
        raise InvalidOutput("JSON nested too deeply") from None
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
        """Generate and validate an object of ``schema``, retrying once with the error shown.

        A reply cut off by the token limit counts as invalid.  ``seed`` + the
        attempt number seeds each generation.

        Args:
            messages: The conversation so far.
            schema: The pydantic model the reply must validate as.
            json_schema: The schema sent to the backend; defaults to ``schema``'s own.
            seed: The base seed of the generations, or None.

        Returns:
            Every attempt, and the value (None, with the last problem, when both failed).

        Raises:
            LLMError: From ``generate``, when the backend itself fails.
        """
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
