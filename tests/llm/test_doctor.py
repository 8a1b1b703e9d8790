"""``opar-sim doctor``: says what is wrong with the configured Ollama and exits non-zero."""

from __future__ import annotations

import socket

import pytest

from opar_sim.cli.main import main
from opar_sim.llm.health import model_present
from opar_sim.spec.build import load_spec
from tests.conftest import EXPERIMENTS


def serve_ollama(httpserver, models):
    httpserver.expect_request("/api/version").respond_with_json({"version": "0.9.0"})
    tags = {"models": [{"name": m, "model": m, "size": 1} for m in models]}
    httpserver.expect_request("/api/tags").respond_with_json(tags)
    return httpserver.url_for("/").rstrip("/")


def spec_file(tmp_path, host, light="qwen2.5:0.5b", strong="qwen2.5:3b"):
    path = tmp_path / "spec.toml"
    path.write_text(
        f"""name = "t"
[task]
name = "weather"
[agent]
kind = "llm"
[agent.backend]
backend = "ollama"
host = "{host}"
model = "{light}"
[agent.evaluator]
backend = "ollama"
host = "{host}"
model = "{strong}"
"""
    )
    return str(path)


def test_all_good_when_the_server_answers_and_has_the_models(httpserver, tmp_path, capsys):
    host = serve_ollama(httpserver, ["qwen2.5:0.5b", "qwen2.5:3b"])
    assert main(["doctor", spec_file(tmp_path, host)]) == 0
    out = capsys.readouterr().out
    assert "version 0.9.0" in out and "all good" in out


def test_a_missing_model_fails_and_says_to_pull_it(httpserver, tmp_path, capsys):
    host = serve_ollama(httpserver, ["qwen2.5:0.5b"])
    assert main(["doctor", spec_file(tmp_path, host)]) == 1
    out = capsys.readouterr().out
    assert "ollama pull qwen2.5:3b" in out
    assert "1 problem" in out


def test_an_unreachable_ollama_host_fails_and_says_how_to_start_it(monkeypatch, capsys):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("OLLAMA_HOST", f"127.0.0.1:{port}")
    assert main(["doctor"]) == 1
    out = capsys.readouterr().out
    assert f"127.0.0.1:{port}" in out and "ollama serve" in out


def test_without_a_spec_it_checks_ollama_host_and_lists_models(httpserver, monkeypatch, capsys):
    monkeypatch.setenv("OLLAMA_HOST", serve_ollama(httpserver, ["llama3.2:latest"]))
    assert main(["doctor"]) == 0
    assert "llama3.2:latest" in capsys.readouterr().out


def test_a_server_that_is_not_ollama_fails(httpserver, monkeypatch, capsys):
    httpserver.expect_request("/api/version").respond_with_data("nope", status=404)
    monkeypatch.setenv("OLLAMA_HOST", httpserver.url_for("/"))
    assert main(["doctor"]) == 1
    assert "not an Ollama API" in capsys.readouterr().out


def test_a_missing_spec_exits_2(capsys):
    assert main(["doctor", "no/such.toml"]) == 2
    assert "spec not found" in capsys.readouterr().err


def test_the_shipped_ollama_spec_names_no_host():
    spec = load_spec(EXPERIMENTS / "flight_booking_ollama.toml")
    assert spec.agent.backend is not None and spec.agent.evaluator is not None
    assert spec.agent.backend.host is None and spec.agent.evaluator.host is None


@pytest.mark.parametrize(
    ("model", "installed", "present"),
    [
        ("llama3.2", ["llama3.2:latest"], True),
        ("llama3.2:1b", ["llama3.2:latest"], False),
        ("qwen2.5:0.5b", ["qwen2.5:0.5b"], True),
    ],
)
def test_a_bare_model_name_means_the_latest_tag(model, installed, present):
    assert model_present(model, installed) is present
