"""A small Ollama-protocol server backed by the embedded llama.cpp model, for tests.

It speaks the part of the documented Ollama API the LLM agent and ``doctor``
use: ``GET /`` ("Ollama is running"), ``GET /api/version``, ``GET /api/tags``
and ``POST /api/chat``, streaming (NDJSON, the default, as in Ollama) or not.
``format`` (a JSON schema, or "json") becomes llama.cpp's grammar; ``options``
maps ``num_predict`` → max_tokens, ``temperature`` and ``seed``.  An unknown
model is a 404 with Ollama's error body.  Durations are nanoseconds, as in
Ollama's replies.

Run it by hand with ``python tests/llm/ollama_server.py --port 11434``.
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opar_sim.llm.llamacpp_backend import LlamaCppBackend

MODEL = "smollm2:135m"
VERSION = "0.0.0-opar-sim-test"


def _now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


class OllamaServer:
    """Serves ``model_name`` from a LlamaCppBackend on 127.0.0.1:``port`` (0: any free port)."""

    def __init__(self, backend: LlamaCppBackend, model_name: str = MODEL, port: int = 0) -> None:
        self.backend = backend
        self.model_name = model_name
        self.requests: list[dict[str, Any]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

            def _send(self, status: int, body: bytes, ctype: str) -> None:
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _json(self, status: int, obj: Any) -> None:
                self._send(status, json.dumps(obj).encode(), "application/json; charset=utf-8")

            def do_GET(self) -> None:
                if self.path in ("/", ""):
                    self._send(200, b"Ollama is running", "text/plain; charset=utf-8")
                elif self.path == "/api/version":
                    self._json(200, {"version": VERSION})
                elif self.path == "/api/tags":
                    self._json(200, {"models": [server.tag()]})
                else:
                    self._send(404, b"404 page not found", "text/plain")

            def do_HEAD(self) -> None:
                self._send(200 if self.path == "/" else 404, b"", "text/plain")

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except json.JSONDecodeError as exc:
                    self._json(400, {"error": f"invalid JSON: {exc}"})
                    return
                if self.path != "/api/chat":
                    self._send(404, b"404 page not found", "text/plain")
                    return
                server.requests.append(body)
                model = body.get("model")
                if not model:
                    self._json(400, {"error": "model is required"})
                    return
                if model not in (server.model_name, server.model_name.split(":")[0]):
                    self._json(404, {"error": f'model "{model}" not found, try pulling it first'})
                    return
                reply = server.chat(body)
                if body.get("stream", True):
                    self._stream(reply)
                else:
                    self._json(200, reply)

            def _stream(self, reply: dict[str, Any]) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "application/x-ndjson")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                text = reply["message"]["content"]
                pieces = [text[i : i + 8] for i in range(0, len(text), 8)]
                for piece in pieces:
                    part = {
                        "model": reply["model"],
                        "created_at": _now(),
                        "message": {"role": "assistant", "content": piece},
                        "done": False,
                    }
                    self._chunk(json.dumps(part).encode() + b"\n")
                final = dict(reply)
                final["message"] = {"role": "assistant", "content": ""}
                if reply["message"].get("tool_calls"):  # Ollama sends them on the last line
                    final["message"]["tool_calls"] = reply["message"]["tool_calls"]
                self._chunk(json.dumps(final).encode() + b"\n")
                self._chunk(b"")

            def _chunk(self, data: bytes) -> None:
                self.wfile.write(f"{len(data):X}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()

        self.httpd = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def tag(self) -> dict[str, Any]:
        return {
            "name": self.model_name,
            "model": self.model_name,
            "modified_at": _now(),
            "size": 0,
            "digest": "0" * 64,
            "details": {"format": "gguf", "family": "llama", "parameter_size": "135M"},
        }

    def chat(self, body: dict[str, Any]) -> dict[str, Any]:
        """Run one chat request on the embedded model; the reply in Ollama's fields."""
        if body.get("tools"):
            return self.tool_chat(body)
        options = body.get("options") or {}
        fmt = body.get("format")
        schema: dict[str, Any] | None = None
        json_mode = False
        if isinstance(fmt, dict):
            schema = fmt
        elif fmt == "json":
            json_mode = True
        predict = int(options.get("num_predict", -1))
        started = time.perf_counter_ns()
        out = self.backend.complete_raw(
            body.get("messages") or [],
            schema if schema is not None else ({} if json_mode else None),
            seed=options.get("seed"),
            max_tokens=predict if predict > 0 else 512,
            temperature=float(options.get("temperature", 0.8)),
        )
        total = time.perf_counter_ns() - started
        choice = out["choices"][0]
        usage = out.get("usage") or {}
        completion = int(usage.get("completion_tokens", 0))
        prompt = int(usage.get("prompt_tokens", 0))
        share = prompt / max(prompt + completion, 1)
        return {
            "model": body["model"],
            "created_at": _now(),
            "message": {"role": "assistant", "content": choice["message"].get("content") or ""},
            "done": True,
            "done_reason": "length" if choice.get("finish_reason") == "length" else "stop",
            "total_duration": total,
            "load_duration": 0,
            "prompt_eval_count": prompt,
            "prompt_eval_duration": int(total * share),
            "eval_count": completion,
            "eval_duration": int(total * (1 - share)),
        }

    def tool_chat(self, body: dict[str, Any]) -> dict[str, Any]:
        """A request with ``tools``: the model answers one tool call or a final answer.

        The output is constrained to ``{"tool": NAME, "args": {...}}`` for one of the tools
        or ``{"answer": TEXT}``, and sent back as Ollama does: ``message.tool_calls`` (with
        the arguments as an object) or the answer as the content.  Tool results and earlier
        calls are shown to the model as plain messages (its template knows no tool role).
        """
        tools = [t["function"] for t in body["tools"]]
        choices: list[dict[str, Any]] = [
            {
                "type": "object",
                "properties": {
                    "tool": {"const": t["name"]},
                    "args": t.get("parameters") or {"type": "object"},
                },
                "required": ["tool", "args"],
            }
            for t in tools
        ]
        choices.append(
            {
                "type": "object",
                "properties": {"answer": {"type": "string", "maxLength": 200}},
                "required": ["answer"],
            }
        )
        listed = "; ".join(f"{t['name']}: {t.get('description', '')}" for t in tools)
        messages = [{"role": "system", "content": f"Tools: {listed}. Reply with JSON."}]
        for m in body.get("messages") or []:
            if m.get("role") == "tool":
                messages.append({"role": "user", "content": f"Tool result: {m.get('content')}"})
            elif m.get("tool_calls"):
                calls = [c["function"] for c in m["tool_calls"]]
                messages.append({"role": "assistant", "content": json.dumps(calls)})
            else:
                messages.append({"role": m.get("role", "user"), "content": m.get("content") or ""})
        reply = self.chat(
            {**body, "tools": None, "messages": messages, "format": {"anyOf": choices}}
        )
        try:
            out = json.loads(reply["message"]["content"])
        except json.JSONDecodeError:
            return reply  # cut off: the text as it came
        if "tool" in out:
            call = {"function": {"name": out["tool"], "arguments": out.get("args") or {}}}
            reply["message"] = {"role": "assistant", "content": "", "tool_calls": [call]}
        else:
            reply["message"] = {"role": "assistant", "content": str(out.get("answer", ""))}
        return reply

    def start(self) -> OllamaServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=11434)
    parser.add_argument("--model", default="smollm2", help="GGUF path or smollm2")
    args = parser.parse_args()
    server = OllamaServer(LlamaCppBackend(args.model, num_ctx=4096), port=args.port)
    print(f"serving {MODEL} on {server.url}", flush=True)
    server.httpd.serve_forever()


if __name__ == "__main__":
    main()
