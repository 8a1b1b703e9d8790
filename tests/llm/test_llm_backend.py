"""Structured output over any backend (validate, retry once, give up); the embedded one unloaded."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest
from pydantic import BaseModel

from opar_sim.cli.main import main
from opar_sim.core.llm import JsonSchema, Message
from opar_sim.llm import (
    BackendUnavailable,
    Completion,
    LLMError,
    ScriptedBackend,
    health,
    llamacpp_backend,
)
from opar_sim.llm.base import BackendBase
from opar_sim.llm.llamacpp_backend import LlamaCppBackend
from tests.conftest import EXPERIMENTS

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


# -- the embedded backend without its model: the request it sends, its one-line errors ------
class FakeServer:
    """Stands in for xllamacpp.Server: records requests, answers with a canned body."""

    def __init__(self, body):
        self.body = body
        self.requests = []

    def handle_chat_completions(self, request):
        self.requests.append(request)
        if isinstance(self.body, Exception):
            raise self.body
        return self.body


def embedded(body) -> tuple[LlamaCppBackend, FakeServer]:
    backend = LlamaCppBackend("smollm2", num_predict=32, temperature=0.5)
    server = FakeServer(body)
    backend._server = server  # as if loaded
    return backend, server


OPENAI_REPLY = {
    "choices": [{"finish_reason": "stop", "message": {"role": "assistant", "content": '{"x": 3}'}}],
    "usage": {"prompt_tokens": 11, "completion_tokens": 5},
}


def test_the_embedded_request_is_schema_constrained_seeded_and_uncached():
    backend, server = embedded(OPENAI_REPLY)
    reply = backend.chat(ASK, Point, seed=7)
    assert reply.value == Point(x=3)
    assert (reply.prompt_tokens, reply.completion_tokens) == (11, 5)
    (sent,) = server.requests
    assert sent["response_format"] == {"type": "json_object", "schema": Point.model_json_schema()}
    assert (sent["seed"], sent["temperature"], sent["max_tokens"]) == (7, 0.5, 32)
    # a prompt partly served from llama.cpp's cache can sample another reply: never cached
    assert sent["cache_prompt"] is False
    backend.chat(ASK, Point)  # no seed: a fixed one, not llama.cpp's random default
    backend.complete_raw(ASK, {}, seed=2**32 - 1, max_tokens=8, temperature=0.0)
    assert [r["seed"] for r in server.requests[1:]] == [0, 0]
    assert server.requests[-1]["response_format"]["schema"] == {"type": "object"}


def test_with_llguidance_the_embedded_request_asks_for_compact_json():
    backend, server = embedded(OPENAI_REPLY)
    backend._llguidance = True  # what load() finds in xllamacpp's wheels
    assert backend.chat(ASK, Point, seed=7).value == Point(x=3)
    backend.complete_raw(ASK, {}, seed=1, max_tokens=8, temperature=0.0)
    schemas = [Point.model_json_schema(), {"type": "object"}]
    for sent, schema in zip(server.requests, schemas, strict=True):
        assert "response_format" not in sent
        head, _, body = sent["grammar"].partition("%json ")
        assert head == "%llguidance {}\nstart: "
        assert json.loads(body) == {**schema, "x-guidance": {"whitespace_flexible": False}}


@pytest.mark.parametrize(
    "body",
    [
        {
            "error": {
                "code": 400,
                "message": "request (3031 tokens) exceeds the available "
                "context size (2048 tokens), try increasing it",
            }
        },
        {"code": 500, "type": "server_error", "message": "Expecting value"},
        ValueError("Expected 'messages' to be an array"),
    ],
    ids=["error-body", "bare-error", "raised"],
)
def test_a_refused_embedded_request_is_one_llm_error_line(body):
    backend, _ = embedded(body)
    with pytest.raises(LLMError, match=r"^llama\.cpp: \S") as info:
        backend.chat(ASK, Point)
    assert "\n" not in str(info.value)


def test_without_xllamacpp_the_embedded_backend_says_how_to_install_it(monkeypatch):
    monkeypatch.setattr(llamacpp_backend, "xllamacpp_available", lambda: False)
    with pytest.raises(BackendUnavailable, match="xllamacpp is not installed") as info:
        LlamaCppBackend("smollm2").chat(ASK, Point)
    assert "pip install xllamacpp" in str(info.value) and "\n" not in str(info.value)


def test_a_run_on_the_embedded_model_without_xllamacpp_is_exit_2_and_one_line(
    monkeypatch, capsys, tmp_path
):
    monkeypatch.setattr(health, "xllamacpp_available", lambda: False)
    spec = str(EXPERIMENTS / "flight_booking_llamacpp.toml")
    assert main(["run", spec, "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "xllamacpp: not installed" in err and "pip install xllamacpp" in err
    assert not (tmp_path / "run").exists()
    assert main(["doctor", spec]) == 1
    assert "xllamacpp" in capsys.readouterr().out
