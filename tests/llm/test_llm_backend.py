"""Structured output over any backend: validate, retry once with the error, then give up."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from pydantic import BaseModel

from opar_sim.core.llm import JsonSchema, Message
from opar_sim.llm import BackendUnavailable, Completion, ScriptedBackend
from opar_sim.llm.base import BackendBase

ASK = [{"role": "user", "content": "give me a point"}]


class Point(BaseModel):
    x: int


def test_a_valid_reply_is_parsed_into_the_schema():
    backend = ScriptedBackend(['{"x": 3}'], prompt_tokens=12, completion_tokens=4, seconds=0.25)
    reply = backend.chat(ASK, Point)
    assert reply.value == Point(x=3)
    assert (reply.prompt_tokens, reply.completion_tokens, reply.model_seconds) == (12, 4, 0.25)
    assert len(reply.attempts) == 1


def test_the_schema_sent_is_the_models_json_schema_unless_overridden():
    backend = ScriptedBackend(['{"x": 3}'])
    backend.chat(ASK, Point)
    backend.chat(ASK, Point, json_schema={"type": "object"})
    assert backend.requests[0][1] == Point.model_json_schema()
    assert backend.requests[1][1] == {"type": "object"}


def test_invalid_output_is_retried_once_with_the_validation_error_in_the_prompt():
    backend = ScriptedBackend(['{"x": "three"}', '{"x": 3}'])
    reply = backend.chat(ASK, Point, seed=7)
    assert reply.value == Point(x=3)
    retry = backend.requests[1][0]
    assert retry[: len(ASK)] == ASK
    assert retry[-2] == {"role": "assistant", "content": '{"x": "three"}'}
    assert "x: Input should be a valid integer" in retry[-1]["content"]
    assert [r[2] for r in backend.requests] == [7, 8]  # the retry gets its own seed
    assert reply.prompt_tokens == 200  # both attempts are paid for


def test_a_second_invalid_reply_gives_no_value_and_the_reason():
    backend = ScriptedBackend(["not json"])
    reply = backend.chat(ASK, Point)
    assert reply.value is None
    assert len(reply.attempts) == 2
    assert reply.error is not None and "not valid JSON" in reply.error


class Truncating(BackendBase):
    name = "truncating"

    def generate(
        self, messages: Sequence[Message], json_schema: JsonSchema, seed: int | None
    ) -> Completion:
        return Completion('{"x": 3', 10, 256, 1.0, 1.0, done_reason="length")


def test_output_cut_by_the_token_limit_is_invalid_and_says_to_raise_num_predict():
    reply = Truncating("m").chat(ASK, Point)
    assert reply.value is None
    assert reply.error is not None and "num_predict" in reply.error


def test_backend_failures_are_raised_as_typed_errors():
    backend = ScriptedBackend([BackendUnavailable("start it with `ollama serve`")])
    with pytest.raises(BackendUnavailable, match="ollama serve") as info:
        backend.chat(ASK, Point)
    assert info.value.reason == "backend_unavailable"
