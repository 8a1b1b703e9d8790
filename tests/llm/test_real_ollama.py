"""Opt-in: the LLM agent against a real Ollama.

Runs only when OLLAMA_HOST is set and the server has the model named by
OPAR_SIM_OLLAMA_MODEL (default qwen2.5:0.5b); skipped otherwise.
"""

from __future__ import annotations

import json
import os

import httpx
import pytest

from opar_sim.cli.main import main
from opar_sim.llm.health import model_present

pytestmark = pytest.mark.llm

MODEL = os.environ.get("OPAR_SIM_OLLAMA_MODEL", "qwen2.5:0.5b")


@pytest.fixture(scope="module")
def real_ollama() -> str:
    host = os.environ.get("OLLAMA_HOST")
    if not host:
        pytest.skip("set OLLAMA_HOST to run against a real Ollama")
    url = host if "://" in host else f"http://{host}"
    try:
        tags = httpx.get(url.rstrip("/") + "/api/tags", timeout=5).json()
    except (httpx.HTTPError, ValueError):
        pytest.skip(f"no Ollama answering at {host}")
    if not model_present(MODEL, [m.get("model") or m.get("name") for m in tags["models"]]):
        pytest.skip(f"Ollama at {host} lacks {MODEL} (ollama pull {MODEL})")
    return host


def test_a_weather_episode_on_a_real_ollama(real_ollama, tmp_path):
    spec = tmp_path / "spec.toml"
    spec.write_text(
        f"""name = "real_ollama"
episodes = 1
[task]
name = "weather"
[agent]
kind = "llm"
[agent.backend]
backend = "ollama"
model = "{MODEL}"
[controller]
name = "threshold"
[limits]
max_steps = 4
"""
    )
    assert main(["doctor", str(spec)]) == 0
    assert main(["run", str(spec), "--out", str(tmp_path / "run")]) == 0
    (episode,) = [
        json.loads(x) for x in (tmp_path / "run" / "episodes.jsonl").read_text().splitlines()
    ]
    assert episode["steps"] >= 1 and episode["tokens"] > 0
    assert not episode["outcome"].startswith("error:backend")
