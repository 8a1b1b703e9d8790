"""LLM backends: one protocol, Ollama, embedded llama.cpp, and a scripted one for tests.

Nothing here imports ``ollama`` or ``xllamacpp`` at import time; a backend
loads its client or model on first use.
"""

from opar_sim.core.llm import (
    BackendHTTPError,
    BackendTimeout,
    BackendUnavailable,
    Completion,
    InvalidOutput,
    LLMBackend,
    LLMError,
    ModelMissing,
    Reply,
)
from opar_sim.llm.base import BackendBase
from opar_sim.llm.config import BackendSpec, make_backend
from opar_sim.llm.scripted import ScriptedBackend

__all__ = [
    "BackendBase",
    "BackendHTTPError",
    "BackendSpec",
    "BackendTimeout",
    "BackendUnavailable",
    "Completion",
    "InvalidOutput",
    "LLMBackend",
    "LLMError",
    "ModelMissing",
    "Reply",
    "ScriptedBackend",
    "make_backend",
]
