"""The Ollama backend, on the official ``ollama`` client.

Non-streaming ``/api/chat`` by default, with ``format`` set to the JSON schema
and ``options`` carrying seed, temperature, num_predict and num_ctx.  A
timeout is always set (the client's own default waits forever).  Streaming is
available for servers behind proxies that buffer; the final NDJSON line carries
the metrics.  The ``ollama`` package is imported when the backend is first
used, so the simulated path never pays for it.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from opar_sim.core.errors import InputError
from opar_sim.core.llm import (
    BackendHTTPError,
    BackendTimeout,
    BackendUnavailable,
    Completion,
    JsonSchema,
    Message,
    ModelMissing,
)
from opar_sim.llm.base import BackendBase

DEFAULT_HOST = "http://127.0.0.1:11434"


def resolve_host(host: str | None) -> str:
    """The spec's host, else ``OLLAMA_HOST``, else the default; with a scheme and a port.

    Raises:
        InputError: naming the spec's ``host`` or ``OLLAMA_HOST`` when it is not
            ``host[:port]`` or an http(s) URL.
    """
    source = "[agent.backend] host" if host else "OLLAMA_HOST"
    given = host or os.environ.get("OLLAMA_HOST") or DEFAULT_HOST
    url = _resolve(given)
    try:
        parsed = urlsplit(url)
        port = parsed.port
    except ValueError:
        parsed, port = None, None
    if (
        parsed is None
        or parsed.scheme not in ("http", "https")
        or not parsed.hostname
        or port is None
        or any(c.isspace() for c in url)
    ):
        raise InputError(
            f"{source}={given!r}: not a host[:port] or an http(s) URL "
            "(e.g. 127.0.0.1:11434 or http://gpu-box:11434)"
        )
    return url


def _resolve(given: str) -> str:
    raw = given.strip().rstrip("/")
    if "://" not in raw:
        raw = "http://" + raw
    scheme, rest = raw.split("://", 1)
    if rest.startswith("0.0.0.0"):  # a server's listen address: connect to loopback
        rest = "127.0.0.1" + rest[len("0.0.0.0") :]
    hostport = rest.split("/", 1)[0]
    if ":" not in hostport.rsplit("]", 1)[-1]:
        rest = hostport + ":11434" + rest[len(hostport) :]
    return f"{scheme}://{rest}"


class OllamaBackend(BackendBase):
    """A model served by Ollama (``ollama serve``), reached over HTTP."""

    name = "ollama"

    def __init__(
        self,
        model: str,
        *,
        host: str | None = None,
        timeout: float = 120.0,
        temperature: float = 0.0,
        num_predict: int = 256,
        num_ctx: int = 4096,
        stream: bool = False,
        keep_alive: str | None = None,
    ) -> None:
        super().__init__(model)
        self.host = resolve_host(host)
        self.timeout = timeout
        self.temperature = temperature
        self.num_predict = num_predict
        self.num_ctx = num_ctx
        self.stream = stream
        self.keep_alive = keep_alive
        self._client: Any = None

    def _connect(self) -> Any:
        if self._client is None:
            import ollama

            self._client = ollama.Client(host=self.host, timeout=self.timeout)
        return self._client

    def options(self, seed: int | None) -> dict[str, Any]:
        """The ``options`` object sent with every chat request."""
        opts: dict[str, Any] = {
            "temperature": self.temperature,
            "num_predict": self.num_predict,
            "num_ctx": self.num_ctx,
        }
        if seed is not None:
            opts["seed"] = seed
        return opts

    def generate(
        self, messages: Sequence[Message], json_schema: JsonSchema, seed: int | None
    ) -> Completion:
        """One chat request to Ollama with ``format`` = ``json_schema`` (streamed if configured).

        Connection failures, timeouts and error statuses become typed errors
        (``BackendUnavailable``, ``ModelMissing``, ``BackendTimeout``, ``BackendHTTPError``)
        whose message says what to do.
        """
        import httpx
        import ollama

        client = self._connect()
        started = time.perf_counter()
        try:
            response = client.chat(
                model=self.model,
                messages=list(messages),
                format=json_schema,
                options=self.options(seed),
                stream=self.stream,
                keep_alive=self.keep_alive,
            )
            if self.stream:
                return self._collect(response, started)
            return _completion(response, _content(response.message), started)
        except ConnectionError as exc:  # the client turns httpx.ConnectError into this
            raise self._unreachable(exc) from None
        except httpx.ConnectError as exc:  # raised raw while a stream is being opened
            raise self._unreachable(exc) from None
        except httpx.TimeoutException:
            raise BackendTimeout(
                f"Ollama at {self.host} did not answer within {self.timeout:g} s; "
                "raise the backend's timeout or use a smaller model"
            ) from None
        except ollama.ResponseError as exc:
            if exc.status_code == 404:
                raise ModelMissing(
                    f"Ollama at {self.host} has no model {self.model!r}: "
                    f"run `ollama pull {self.model}` ({exc.error})"
                ) from None
            status = "" if exc.status_code < 0 else f" (HTTP {exc.status_code})"
            raise BackendHTTPError(f"Ollama at {self.host} failed{status}: {exc.error}") from None
        except (httpx.HTTPError, json.JSONDecodeError) as exc:
            raise BackendHTTPError(f"Ollama at {self.host}: {type(exc).__name__}: {exc}") from None
        except (ValueError, TypeError, KeyError, AttributeError, RecursionError) as exc:
            # a reply of the wrong shape (the client could not read it): this episode's error
            problem = str(exc).strip().splitlines()[0][:120] if str(exc).strip() else ""
            raise BackendHTTPError(
                f"Ollama at {self.host} sent a malformed reply ({type(exc).__name__}: {problem})"
            ) from None

    def _unreachable(self, exc: Exception) -> BackendUnavailable:
        return BackendUnavailable(
            f"cannot reach Ollama at {self.host}: start it with `ollama serve`, "
            f"or set OLLAMA_HOST to where it runs ({exc})"
        )

    def _collect(self, chunks: Any, started: float) -> Completion:
        """Concatenate a stream's content; the final line (done) carries the metrics."""
        parts: list[str] = []
        last = None
        for chunk in chunks:
            parts.append(_content(chunk.message))
            last = chunk
        if last is None or not last.done:
            raise BackendHTTPError(f"Ollama at {self.host}: stream ended without a final line")
        return _completion(last, "".join(parts), started)


def _content(message: Any) -> str:
    """The reply's text; a tool call (no content) is read as {"tool": ..., "args": ...}."""
    content = message.content or ""
    calls = message.tool_calls or []
    if not content.strip() and calls:
        fn = calls[0].function
        return json.dumps({"tool": fn.name, "args": dict(fn.arguments)})
    return str(content)


def _completion(response: Any, text: str, started: float) -> Completion:
    wall = time.perf_counter() - started
    total = response.total_duration
    return Completion(
        text=text,
        prompt_tokens=int(response.prompt_eval_count or 0),
        completion_tokens=int(response.eval_count or 0),
        model_seconds=total / 1e9 if total else wall,
        wall_seconds=wall,
        done_reason=str(response.done_reason or "stop"),
    )
