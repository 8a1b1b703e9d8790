"""The agent frameworks the adapters are tested against are installed where ``make test`` runs.

Each adapter's tests skip, naming the package, when its framework is absent; under
``make test`` (``OPAR_SIM_REQUIRE_LLM=1``: the ``agents`` extra is installed with the model)
an absent framework fails here instead, so those tests cannot silently skip in CI.
"""

from __future__ import annotations

import importlib.util
import os

import pytest

FRAMEWORKS = {
    "inspect_ai": "inspect-ai",
    "pydantic_ai": "pydantic-ai-slim",
    "langchain": "langchain",
    "langchain_ollama": "langchain-ollama",
    "smolagents": "smolagents",
    "agents": "openai-agents",
    "agent_framework": "agent-framework-core",
    "agent_framework_orchestrations": "agent-framework-orchestrations",
}


def test_every_framework_of_the_agents_extra_is_installed():
    missing = [pkg for mod, pkg in FRAMEWORKS.items() if importlib.util.find_spec(mod) is None]
    if missing and not os.environ.get("OPAR_SIM_REQUIRE_LLM"):
        pytest.skip(f"not installed: {', '.join(missing)}: pip install 'opar-sim[agents]'")
    assert missing == []
