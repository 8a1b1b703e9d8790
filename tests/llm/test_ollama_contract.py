"""What the Ollama backend sends to /api/chat, and how it handles each kind of reply.

pytest-httpserver plays Ollama with replies shaped as the documented API
(docs/api.md of ollama/ollama): non-streamed, streamed NDJSON ending with a
metrics line, tool calls, 404 for a model not pulled, 500, an error line in
the middle of a stream; plus a closed port and a server slower than the
timeout.  tests/llm/test_llm_integration.py runs the same behaviours against the
llama.cpp-backed Ollama-protocol server.
"""

from __future__ import annotations

import json
import socket
import time

import pytest
from pydantic import BaseModel
from werkzeug import Request, Response

from opar_sim.llm import BackendHTTPError, BackendTimeout, BackendUnavailable, ModelMissing
from opar_sim.llm.ollama_backend import OllamaBackend, resolve_host
from opar_sim.llm.schemas import ToolCallOut

MODEL = "qwen2.5:0.5b"
ASK = [{"role": "system", "content": "reply in JSON"}, {"role": "user", "content": "a point"}]


class Point(BaseModel):
    x: int


def final(content: str = '{"x": 3}', **fields):
    """A complete, non-streamed /api/chat reply."""
    return {
        "model": MODEL,
        "created_at": "2026-01-01T00:00:00Z",
        "message": {"role": "assistant", "content": content},
        "done": True,
        "done_reason": "stop",
        "total_duration": 2_500_000_000,
        "load_duration": 1_000_000,
        "prompt_eval_count": 26,
        "prompt_eval_duration": 500_000_000,
        "eval_count": 7,
        "eval_duration": 1_900_000_000,
    } | fields


def ndjson(*objects) -> str:
    return "".join(json.dumps(o) + "\n" for o in objects)


def chunk(content: str):
    return {
        "model": MODEL,
        "created_at": "2026-01-01T00:00:00Z",
        "message": {"role": "assistant", "content": content},
        "done": False,
    }


def backend(server, **kw) -> OllamaBackend:
    kw.setdefault("timeout", 5.0)
    return OllamaBackend(MODEL, host=server.url_for("/"), **kw)


def test_the_chat_request_is_exactly_the_documented_one(httpserver):
    expected = {
        "model": MODEL,
        "messages": ASK,
        "stream": False,
        "format": Point.model_json_schema(),
        "options": {"temperature": 0.0, "num_predict": 128, "num_ctx": 2048, "seed": 11},
        "tools": [],
    }
    httpserver.expect_oneshot_request("/api/chat", method="POST", json=expected).respond_with_json(
        final()
    )
    reply = backend(httpserver, num_predict=128, num_ctx=2048).chat(ASK, Point, seed=11)
    httpserver.check_assertions()
    assert reply.value == Point(x=3)


def test_a_reply_carries_its_token_counts_duration_and_done_reason(httpserver):
    httpserver.expect_oneshot_request("/api/chat").respond_with_json(final())
    reply = backend(httpserver).chat(ASK, Point)
    (attempt,) = reply.attempts
    assert (attempt.prompt_tokens, attempt.completion_tokens) == (26, 7)
    assert attempt.model_seconds == pytest.approx(2.5)
    assert attempt.done_reason == "stop" and attempt.wall_seconds > 0


def test_a_streamed_reply_is_joined_and_its_last_line_gives_the_metrics(httpserver):
    body = ndjson(chunk('{"x"'), chunk(": 3}"), final(content=""))
    httpserver.expect_oneshot_request("/api/chat").respond_with_data(
        body, content_type="application/x-ndjson"
    )
    reply = backend(httpserver, stream=True).chat(ASK, Point)
    sent = httpserver.log[-1][0].get_json()
    assert sent["stream"] is True
    assert reply.value == Point(x=3)
    assert (reply.prompt_tokens, reply.completion_tokens) == (26, 7)


def test_a_tool_call_reply_is_read_as_the_action(httpserver):
    call = {"function": {"name": "get_weather", "arguments": {"city": "Paris"}}}
    message = {"role": "assistant", "content": "", "tool_calls": [call]}
    httpserver.expect_oneshot_request("/api/chat").respond_with_json(final() | {"message": message})
    reply = backend(httpserver).chat(ASK, ToolCallOut)
    assert reply.value == ToolCallOut(tool="get_weather", args={"city": "Paris"})


def test_a_model_that_is_not_pulled_says_to_pull_it(httpserver):
    error = {"error": f'model "{MODEL}" not found, try pulling it first'}
    httpserver.expect_oneshot_request("/api/chat").respond_with_json(error, status=404)
    with pytest.raises(ModelMissing, match=f"run `ollama pull {MODEL}`") as info:
        backend(httpserver).chat(ASK, Point)
    assert info.value.reason == "backend_unavailable"


def test_a_server_error_is_a_backend_error_with_the_status_and_message(httpserver):
    httpserver.expect_oneshot_request("/api/chat").respond_with_json(
        {"error": "llama runner process has terminated"}, status=500
    )
    with pytest.raises(BackendHTTPError, match=r"HTTP 500.*llama runner process has terminated"):
        backend(httpserver).chat(ASK, Point)


def test_an_error_line_in_the_middle_of_a_stream_is_a_backend_error(httpserver):
    body = ndjson(chunk('{"x"'), {"error": "out of memory"})
    httpserver.expect_oneshot_request("/api/chat").respond_with_data(
        body, content_type="application/x-ndjson"
    )
    with pytest.raises(BackendHTTPError, match="out of memory"):
        backend(httpserver, stream=True).chat(ASK, Point)


def test_output_cut_by_num_predict_is_retried_then_invalid(httpserver):
    httpserver.expect_request("/api/chat").respond_with_json(
        final(content='{"x": ', done_reason="length")
    )
    reply = backend(httpserver).chat(ASK, Point)
    assert reply.value is None and len(reply.attempts) == 2
    assert reply.error is not None and "num_predict" in reply.error


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("stream", [False, True])
def test_a_closed_port_says_how_to_start_ollama(stream):
    port = closed_port()
    with pytest.raises(BackendUnavailable, match="ollama serve") as info:
        OllamaBackend(MODEL, host=f"127.0.0.1:{port}", stream=stream).chat(ASK, Point)
    assert f"127.0.0.1:{port}" in str(info.value)


def test_a_server_slower_than_the_timeout_is_a_timeout(httpserver):
    def slow(request: Request) -> Response:
        time.sleep(1.5)
        return Response(json.dumps(final()), content_type="application/json")

    httpserver.expect_oneshot_request("/api/chat").respond_with_handler(slow)
    started = time.perf_counter()
    with pytest.raises(BackendTimeout, match="timeout") as info:
        backend(httpserver, timeout=0.3).chat(ASK, Point)
    assert time.perf_counter() - started < 1.4
    assert info.value.reason == "backend_timeout"


@pytest.mark.parametrize(
    ("given", "env", "expected"),
    [
        (None, None, "http://127.0.0.1:11434"),
        (None, "0.0.0.0:8080", "http://127.0.0.1:8080"),
        (None, "gpu-box", "http://gpu-box:11434"),
        ("https://ollama.example.com:443", "ignored:1", "https://ollama.example.com:443"),
    ],
)
def test_the_host_comes_from_the_spec_then_ollama_host_then_the_default(
    monkeypatch, given, env, expected
):
    if env is None:
        monkeypatch.delenv("OLLAMA_HOST", raising=False)
    else:
        monkeypatch.setenv("OLLAMA_HOST", env)
    assert resolve_host(given) == expected
