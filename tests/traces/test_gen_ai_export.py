"""``export --format otel-genai``: OTLP spans with gen_ai.* names, and the round trip.

The export parses as an ``ExportTraceServiceRequest`` (opentelemetry-proto; hex ids turned
into base64 first, as in test_otlp), its tree is invoke_agent -> plan / chat /
execute_tool, each chat span carries the iteration's decision, reason and terms under
``opar_sim.*``, and importing the export gives back the simulated run's rows exactly.
"""

from __future__ import annotations

import contextlib
import io
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from opar_sim.cli.main import main
from opar_sim.rundir import iter_episodes, iter_steps, read_json, read_jsonl
from opar_sim.traces import import_traces
from tests.conftest import SPEC
from tests.traces.test_otlp import _as_proto_json, _attrs

trace_service = pytest.importorskip(
    "opentelemetry.proto.collector.trace.v1.trace_service_pb2",
    reason="the OTLP schema check needs opentelemetry-proto (the dev extra)",
)
json_format = pytest.importorskip("google.protobuf.json_format")


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("genai") / "run"
    argv = ["compare", SPEC, "--controllers", "pid,threshold", "--episodes", "6"]
    with contextlib.redirect_stdout(io.StringIO()):
        assert main([*argv, "--out", str(out), "--workers", "1"]) == 0
    return out


@pytest.fixture(scope="module")
def exported(run_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("genai-export") / "spans.json"
    with contextlib.redirect_stdout(io.StringIO()):
        argv = ["export", str(run_dir), "--format", "otel-genai", "--out", str(out)]
        assert main(argv) == 0
    return out


def _spans(path: Path) -> list[Any]:
    request = trace_service.ExportTraceServiceRequest()
    json_format.Parse(json.dumps(_as_proto_json(json.loads(path.read_text()))), request)
    return [s for r in request.resource_spans for ss in r.scope_spans for s in ss.spans]


def _key(row: dict[str, Any]) -> tuple[Any, ...]:
    return (row["controller"], row["episode"], row.get("trial", 1), row.get("attempt", 1))


def test_export_parses_as_otlp_with_the_gen_ai_tree(run_dir: Path, exported: Path) -> None:
    spans = _spans(exported)
    episodes = list(iter_episodes(run_dir))
    steps = [r for r in iter_steps(run_dir) if r.get("parent") is None]
    ops = Counter(_attrs(s)["gen_ai.operation.name"] for s in spans)
    new_plans = sum(
        1
        for k, r in enumerate(steps)
        if k == 0 or _key(steps[k - 1]) != _key(r) or steps[k - 1].get("plan_id") != r["plan_id"]
    )
    assert ops == {
        "invoke_agent": len(episodes),
        "chat": len(steps),
        "plan": new_plans,
        "execute_tool": sum(1 for r in steps if r["tool"]),
    }
    by_id = {s.span_id: s for s in spans}
    for s in spans:
        op = _attrs(s)["gen_ai.operation.name"]
        if op == "invoke_agent":
            assert s.parent_span_id == b""
        else:
            assert _attrs(by_id[s.parent_span_id])["gen_ai.operation.name"] == "invoke_agent"


def test_each_iteration_carries_decision_reason_and_terms(run_dir: Path, exported: Path) -> None:
    spans = _spans(exported)
    rows = [r for r in iter_steps(run_dir) if r["controller"] == "pid" and r["episode"] == 0]
    root = next(
        s
        for s in spans
        if _attrs(s).get("opar_sim.controller") == "pid" and _attrs(s)["opar_sim.episode"] == 0
    )
    chats = [
        _attrs(s)
        for s in spans
        if s.trace_id == root.trace_id and _attrs(s)["gen_ai.operation.name"] == "chat"
    ]
    assert [c["opar_sim.signal"] for c in chats] == [r["signal"] for r in rows]
    assert [c.get("opar_sim.reason") for c in chats] == [r.get("reason") for r in rows]
    assert [c["opar_sim.terms.p"] for c in chats] == [r["terms"]["p"] for r in rows]
    assert [c["opar_sim.terms.effort"] for c in chats] == [r["terms"]["effort"] for r in rows]
    tools = [
        _attrs(s)["gen_ai.tool.name"]
        for s in spans
        if s.trace_id == root.trace_id and _attrs(s)["gen_ai.operation.name"] == "execute_tool"
    ]
    assert tools == [r["tool"] for r in rows if r["tool"]]


def test_export_then_import_gives_identical_rows(
    run_dir: Path, exported: Path, tmp_path: Path
) -> None:
    out = tmp_path / "back"
    result = import_traces(exported, None, out)  # the format told from the file
    assert result.fmt == "otel-genai"
    original = [r for r in iter_steps(run_dir) if r.get("parent") is None]
    back = list(read_jsonl(out / "steps.jsonl"))
    assert sorted(back, key=lambda r: (*_key(r), r["step"])) == sorted(
        original, key=lambda r: (*_key(r), r["step"])
    )
    assert sorted(read_jsonl(out / "episodes.jsonl"), key=_key) == sorted(
        iter_episodes(run_dir), key=_key
    )
    source = read_json(out / "source.json")
    assert source["opar_sim_rows"] == len(list(iter_episodes(run_dir))) and source["ids"] == {}


def test_without_its_rows_the_export_still_reads_as_gen_ai(
    run_dir: Path, exported: Path, tmp_path: Path
) -> None:
    data = json.loads(exported.read_text())
    for resource in data["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            for span in scope["spans"]:
                span["attributes"] = [
                    a for a in span["attributes"] if not a["key"].endswith("_row")
                ]
    bare = tmp_path / "bare.json"
    bare.write_text(json.dumps(data))
    out = tmp_path / "bare"
    import_traces(bare, "otel-genai", out)
    original = [r for r in iter_steps(run_dir) if r.get("parent") is None]
    back = list(read_jsonl(out / "steps.jsonl"))
    # one step per chat span, its tool from the requested call and the execute_tool span
    assert len(back) == len(original)
    assert Counter(r["tool"] for r in back) == Counter(r["tool"] for r in original)
    assert sum(r["tool_calls"] for r in back) == sum(1 for r in original if r["tool"])
    episodes = list(read_jsonl(out / "episodes.jsonl"))
    assert Counter(e["outcome"] for e in episodes) == Counter(
        e["outcome"] for e in iter_episodes(run_dir)
    )  # opar_sim.outcome on the invoke_agent span


def test_an_edited_export_is_refused(exported: Path, tmp_path: Path, capsys) -> None:
    data = json.loads(exported.read_text())
    spans = data["resourceSpans"][0]["scopeSpans"][0]["spans"]
    first_chat = next(
        k
        for k, s in enumerate(spans)
        if any(a["value"].get("stringValue") == "chat" for a in s["attributes"])
    )
    del spans[first_chat]
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(data))
    argv = ["traces", "import", str(edited), "--out", str(tmp_path / "o")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "the file was edited" in err


def test_an_llm_runs_calls_give_usage_and_provider(run_dir: Path, tmp_path: Path) -> None:
    import shutil

    from opar_sim.rundir import to_line

    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy)
    calls = [
        {"episode": 0, "controller": "pid", "step": 1, "phase": "plan", "backend": "ollama",
         "model": "qwen", "attempts": 1, "prompt_tokens": 120, "completion_tokens": 30},
        {"episode": 0, "controller": "pid", "step": 1, "phase": "evaluate", "backend": "ollama",
         "model": "qwen", "attempts": 1, "prompt_tokens": 200, "completion_tokens": 10},
    ]  # fmt: skip
    (copy / "calls.jsonl").write_text("".join(to_line(c) for c in calls))
    (copy / "manifest.jsonl").unlink()  # calls.jsonl is written by hand: no manifest vouches
    out = tmp_path / "spans.json"
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["export", str(copy), "--format", "otel-genai", "--out", str(out)]) == 0
    spans = _spans(out)
    root = next(
        s
        for s in spans
        if _attrs(s).get("opar_sim.controller") == "pid" and _attrs(s)["opar_sim.episode"] == 0
    )
    mine = [_attrs(s) for s in spans if s.trace_id == root.trace_id]
    plan = next(a for a in mine if a["gen_ai.operation.name"] == "plan")
    chat = next(a for a in mine if a["gen_ai.operation.name"] == "chat")
    assert (plan["gen_ai.usage.input_tokens"], plan["gen_ai.usage.output_tokens"]) == (120, 30)
    assert (chat["gen_ai.usage.input_tokens"], chat["gen_ai.usage.output_tokens"]) == (200, 10)
    assert chat["gen_ai.provider.name"] == plan["gen_ai.provider.name"] == "ollama"
    later = [a for a in mine if a["gen_ai.operation.name"] == "chat"][1]
    assert later["gen_ai.provider.name"] == "opar_sim" and "gen_ai.usage.input_tokens" not in later


def test_openinference_names_the_otlp_export(run_dir: Path, tmp_path: Path) -> None:
    outs = []
    for fmt in ("otlp", "openinference"):
        outs.append(tmp_path / f"{fmt}.json")
        with contextlib.redirect_stdout(io.StringIO()):
            assert main(["export", str(run_dir), "--format", fmt, "--out", str(outs[-1])]) == 0
    assert outs[0].read_bytes() == outs[1].read_bytes()
