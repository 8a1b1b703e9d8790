"""``opar-sim export --format otlp``: spans that the OTLP protobuf schema accepts, shaped right.

The file is parsed into ``ExportTraceServiceRequest`` (opentelemetry-proto) with
protobuf's JSON parser.  OTLP/JSON writes trace and span ids as hex where the
generic protobuf JSON mapping expects base64, so the test converts them first,
as the OTLP specification describes, and checks their byte lengths.
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from opar_sim.cli.main import main
from opar_sim.rundir import iter_episodes, iter_steps, to_line
from tests.conftest import SPEC

trace_service = pytest.importorskip(
    "opentelemetry.proto.collector.trace.v1.trace_service_pb2",
    reason="the OTLP schema check needs opentelemetry-proto (the dev extra)",
)
json_format = pytest.importorskip("google.protobuf.json_format")


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("otlp") / "run"
    argv = ["compare", SPEC, "--controllers", "pid,threshold", "--episodes", "6"]
    with contextlib.redirect_stdout(io.StringIO()):
        assert main([*argv, "--out", str(out), "--workers", "1"]) == 0
    return out


def _export(run_dir: Path, out: Path) -> dict[str, Any]:
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["export", str(run_dir), "--format", "otlp", "--out", str(out)]) == 0
    return json.loads(out.read_text())


def _as_proto_json(data: Any) -> Any:
    """Hex ids (OTLP/JSON) to base64 (protobuf's JSON mapping of bytes)."""
    if isinstance(data, dict):
        return {
            k: base64.b64encode(bytes.fromhex(v)).decode()
            if k in ("traceId", "spanId", "parentSpanId")
            else _as_proto_json(v)
            for k, v in data.items()
        }
    if isinstance(data, list):
        return [_as_proto_json(v) for v in data]
    return data


def _attrs(span: Any) -> dict[str, Any]:
    out = {}
    for kv in span.attributes:
        kind = kv.value.WhichOneof("value")
        out[kv.key] = getattr(kv.value, kind)
    return out


def test_export_parses_as_an_otlp_request_with_the_openinference_tree(run_dir, tmp_path):
    data = _export(run_dir, tmp_path / "spans.json")
    request = trace_service.ExportTraceServiceRequest()
    json_format.Parse(json.dumps(_as_proto_json(data)), request)  # unknown fields: an error
    spans = [s for r in request.resource_spans for ss in r.scope_spans for s in ss.spans]
    episodes = list(iter_episodes(run_dir))
    steps = list(iter_steps(run_dir))
    kinds = Counter(_attrs(s)["openinference.span.kind"] for s in spans)
    assert kinds == {
        "AGENT": len(episodes),
        "CHAIN": len(steps),
        "LLM": len(steps),  # a simulated agent: one LLM span per step with its tokens
        "TOOL": sum(1 for r in steps if r["tool"]),
    }
    assert all(len(s.trace_id) == 16 and len(s.span_id) == 8 for s in spans)
    by_id = {s.span_id: s for s in spans}
    assert len(by_id) == len(spans)  # ids are unique
    parent_kind = {"AGENT": None, "CHAIN": "AGENT", "LLM": "CHAIN", "TOOL": "CHAIN"}
    for s in spans:
        kind = _attrs(s)["openinference.span.kind"]
        if parent_kind[kind] is None:
            assert s.parent_span_id == b""
            continue
        parent = by_id[s.parent_span_id]
        assert _attrs(parent)["openinference.span.kind"] == parent_kind[kind]
        assert parent.trace_id == s.trace_id  # one trace per episode
        assert parent.start_time_unix_nano <= s.start_time_unix_nano <= s.end_time_unix_nano
        assert s.end_time_unix_nano <= parent.end_time_unix_nano
    resource = {
        kv.key: kv.value.string_value for kv in request.resource_spans[0].resource.attributes
    }
    assert resource["service.name"] == "opar-sim"


def test_export_carries_tokens_decisions_and_tool_io(run_dir, tmp_path):
    data = _export(run_dir, tmp_path / "spans.json")
    request = trace_service.ExportTraceServiceRequest()
    json_format.Parse(json.dumps(_as_proto_json(data)), request)
    spans = [s for r in request.resource_spans for ss in r.scope_spans for s in ss.spans]
    episode = next(r for r in iter_episodes(run_dir) if r["controller"] == "pid")
    rows = [r for r in iter_steps(run_dir) if r["controller"] == "pid" and r["episode"] == 0]
    root = next(s for s in spans if s.name == "episode 0 (pid)")
    attrs = _attrs(root)
    assert attrs["llm.token_count.total"] == episode["tokens"]
    assert attrs["opar.outcome"] == episode["outcome"]
    assert attrs["opar.sim_seconds"] == episode["sim_seconds"]
    mine = [s for s in spans if s.trace_id == root.trace_id]
    llm = [_attrs(s)["llm.token_count.total"] for s in mine if s.name == "llm"]
    assert sum(llm) == rows[-1]["tokens"]  # per-step tokens add up to the episode's
    first = next(s for s in mine if s.name == "step 1")
    assert _attrs(first)["opar.signal"] == rows[0]["signal"]
    assert _attrs(first)["opar.terms.effort"] == rows[0]["terms"]["effort"]
    assert (first.end_time_unix_nano - root.start_time_unix_nano) == round(rows[0]["time"] * 1e9)
    tool = next(s for s in mine if s.parent_span_id == first.span_id and s.name.startswith("tool"))
    assert _attrs(tool)["tool.name"] == rows[0]["tool"]
    assert _attrs(tool)["input.value"] == rows[0]["action"]
    assert _attrs(tool)["output.value"] == rows[0]["result"]


def test_export_takes_an_llm_runs_model_calls_from_calls_jsonl(run_dir, tmp_path):
    import shutil

    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy)
    calls = [
        {"episode": 0, "controller": "pid", "step": 1, "phase": "plan", "backend": "ollama",
         "model": "qwen", "attempts": 1, "prompt_tokens": 120, "completion_tokens": 30,
         "model_seconds": 0.5, "wall_seconds": 0.7, "error": None},
        {"episode": 0, "controller": "pid", "step": 1, "phase": "evaluate", "backend": "ollama",
         "model": "qwen", "attempts": 2, "prompt_tokens": 200, "completion_tokens": 10,
         "model_seconds": 0.25, "wall_seconds": 0.3, "error": "invalid_format"},
        {"episode": 0, "controller": "pid", "phase": "episode", "wall_seconds": 3.0,
         "steps": 1, "sim_seconds": 1.0},
    ]  # fmt: skip
    (copy / "calls.jsonl").write_text("".join(to_line(c) for c in calls))
    (copy / "manifest.jsonl").unlink()  # calls.jsonl is written by hand: no manifest vouches
    data = _export(copy, tmp_path / "spans.json")
    request = trace_service.ExportTraceServiceRequest()
    json_format.Parse(json.dumps(_as_proto_json(data)), request)
    spans = [s for r in request.resource_spans for ss in r.scope_spans for s in ss.spans]
    root = next(s for s in spans if s.name == "episode 0 (pid)")
    step = next(s for s in spans if s.trace_id == root.trace_id and s.name == "step 1")
    llm = [s for s in spans if s.parent_span_id == step.span_id and s.name.startswith("llm")]
    assert [s.name for s in llm] == ["llm plan", "llm evaluate"]
    plan, evaluate = (_attrs(s) for s in llm)
    assert (plan["llm.model_name"], plan["llm.token_count.prompt"]) == ("qwen", 120)
    assert plan["llm.token_count.total"] == 150
    assert llm[0].end_time_unix_nano - llm[0].start_time_unix_nano == 500_000_000
    assert llm[1].start_time_unix_nano == llm[0].end_time_unix_nano
    assert llm[1].status.code == 2 and llm[1].status.message == "invalid_format"
    assert evaluate["opar.attempts"] == 2


def test_export_of_a_directory_that_is_not_a_run_exits_2(tmp_path, capsys):
    assert main(["export", str(tmp_path), "--format", "otlp"]) == 2
    assert "is not a run directory" in capsys.readouterr().err
