"""Health checks of LLM backends, for ``opar-sim doctor``.

Each check is a ``Check``: what was checked, whether it passed, and when it
did not, what to do about it.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from opar_sim.core.llm import BackendUnavailable
from opar_sim.llm.config import BackendSpec
from opar_sim.llm.llamacpp_backend import INSTALL_HINT, resolve_model_path, xllamacpp_available
from opar_sim.llm.ollama_backend import resolve_host


@dataclass(frozen=True, slots=True)
class Check:
    """One line of the doctor's report."""

    what: str
    ok: bool
    detail: str = ""
    fix: str = ""


def model_present(model: str, installed: Iterable[str]) -> bool:
    """Ollama names a model ``name:tag``; a bare name means ``name:latest``."""
    wanted = model if ":" in model else f"{model}:latest"
    return any(name in (model, wanted) for name in installed)


def check_ollama(host: str | None, models: Iterable[str], timeout: float = 5.0) -> list[Check]:
    """Reachable, ``GET /api/version``, and each model in ``GET /api/tags``."""
    import httpx

    url = resolve_host(host)
    checks: list[Check] = []
    started = time.monotonic()
    try:
        with httpx.Client(base_url=url, timeout=timeout) as client:
            version = client.get("/api/version")
            version.raise_for_status()
            tags = client.get("/api/tags")
            tags.raise_for_status()
            payload: dict[str, Any] = tags.json()
            if not isinstance(payload, dict):
                raise ValueError("/api/tags is not a JSON object")
            # a server trickling bytes never trips httpx's per-read timeout: the total counts
            elapsed = time.monotonic() - started
            if elapsed > timeout:
                raise httpx.ReadTimeout(f"answered in {elapsed:.1f} s")
    except httpx.ConnectError as exc:
        return [
            Check(
                f"Ollama at {url}",
                False,
                f"unreachable ({exc})",
                "start it with `ollama serve`, or set OLLAMA_HOST to where it runs",
            )
        ]
    except httpx.TimeoutException:
        return [
            Check(
                f"Ollama at {url}",
                False,
                f"no answer within {timeout:g} s",
                "check that OLLAMA_HOST points to an Ollama server and that it is not overloaded",
            )
        ]
    except (httpx.HTTPError, ValueError) as exc:
        return [
            Check(
                f"Ollama at {url}",
                False,
                f"not an Ollama API ({exc})",
                "check OLLAMA_HOST: it must point to an Ollama server (default port 11434)",
            )
        ]
    try:
        named = version.json()
        shown = str(named.get("version", "?")) if isinstance(named, dict) else "?"
    except ValueError:
        shown = "?"
    checks.append(Check(f"Ollama at {url}", True, f"version {shown}"))
    listed = payload.get("models", [])
    installed = [
        str(m.get("model") or m.get("name"))
        for m in (listed if isinstance(listed, list) else [])
        if isinstance(m, dict)
    ]
    for model in dict.fromkeys(models):
        present = model_present(model, installed)
        checks.append(
            Check(
                f"model {model}",
                present,
                "present" if present else f"missing (installed: {', '.join(installed) or 'none'})",
                "" if present else f"run `ollama pull {model}`",
            )
        )
    if not models:
        checks.append(Check("models", True, ", ".join(installed) or "none installed"))
    return checks


def check_llamacpp(model: str) -> list[Check]:
    """The xllamacpp package installed and the GGUF file found (nothing is loaded)."""
    if not xllamacpp_available():
        return [Check("xllamacpp", False, "not installed", INSTALL_HINT)]
    checks = [Check("xllamacpp", True, "installed")]
    try:
        path = resolve_model_path(model)
    except BackendUnavailable as exc:
        checks.append(Check(f"GGUF model {model}", False, str(exc), INSTALL_HINT))
    else:
        checks.append(Check(f"GGUF model {model}", True, str(path)))
    return checks


def check_backends(specs: Iterable[BackendSpec], timeout: float = 5.0) -> list[Check]:
    """Every check the given backends need, each server and model once."""
    specs = list(specs)
    checks: list[Check] = []
    by_host: dict[str, list[str]] = {}
    for s in specs:
        if s.backend == "ollama":
            by_host.setdefault(resolve_host(s.host), []).append(s.model)
    for host, models in by_host.items():
        checks += check_ollama(host, models, timeout)
    for model in dict.fromkeys(s.model for s in specs if s.backend == "llamacpp"):
        checks += check_llamacpp(model)
    return checks
