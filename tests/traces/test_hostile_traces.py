"""Hostile trace files of the span and log formats: one line, exit 2, never a traceback.

Malformed, truncated, non-UTF-8, deeply nested and over-ceiling files; every value of every
fixture replaced by a value of the wrong type (the parsers raise ``TraceFormatError`` or
import, nothing else); names that look like HTML or paths stay data; and a file whose
format cannot be told names the candidates.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from opar_sim.rundir.schema import EpisodeRow, StepRow, problems
from opar_sim.traces.log_import import log_rows, parse_runs
from opar_sim.traces.runs import TraceFormatError
from tests.reliability.conftest import cli
from tests.traces.test_formats_import import FIXTURES, FORMAT_OF

FILES = sorted(FORMAT_OF)


def _refused(tmp_path: Path, capsys: pytest.CaptureFixture[str], path: Path, *flags: str) -> str:
    status, _, err = cli(["traces", "import", path, *flags, "--out", tmp_path / "o"], capsys)
    assert status == 2, err
    assert err.count("\n") == 1 and err.startswith("opar-sim: error: "), err
    assert not (tmp_path / "o" / "steps.jsonl").exists()
    return err


@pytest.mark.parametrize("rel", FILES)
def test_a_truncated_file_is_one_line(tmp_path, capsys, rel):
    data = (FIXTURES / rel).read_bytes()
    cut = tmp_path / "cut.json"
    cut.write_bytes(data[: len(data) // 2])
    err = _refused(tmp_path, capsys, cut, "--format", FORMAT_OF[rel])
    assert "not valid JSON" in err


@pytest.mark.parametrize("rel", FILES)
def test_a_non_utf8_file_is_one_line(tmp_path, capsys, rel):
    data = (FIXTURES / rel).read_bytes()
    bad = tmp_path / "latin1.json"
    at = data.index(b'"', 10) + 1
    bad.write_bytes(data[:at] + b"\xff\xfe" + data[at:])
    _refused(tmp_path, capsys, bad, "--format", FORMAT_OF[rel])


@pytest.mark.parametrize("fmt", sorted(set(FORMAT_OF.values())))
def test_deep_nesting_is_one_line(tmp_path, capsys, fmt):
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    _refused(tmp_path, capsys, deep, "--format", fmt)


def test_deep_nesting_inside_a_string_attribute_is_data(tmp_path, capsys):
    # gen_ai.output.messages is JSON inside a string: too deep to parse, it is ignored
    attrs = {"gen_ai.operation.name": "chat", "gen_ai.output.messages": "[" * 5000 + "]" * 5000}
    path = tmp_path / "span.json"
    path.write_text(json.dumps(attrs))
    status, _, err = cli(["traces", "import", path, "--out", tmp_path / "o"], capsys)
    assert status == 0, err


def test_a_file_over_the_ceiling_is_one_line(tmp_path, capsys, monkeypatch):
    big = tmp_path / "big.json"
    big.write_bytes(b'{"resourceSpans": []}' + b" " * 2_000_000)
    monkeypatch.setenv("OPAR_SIM_MAX_INPUT_MB", "1")
    err = _refused(tmp_path, capsys, big, "--format", "otel-genai")
    assert "ceiling" in err


def test_malformed_and_empty_files(tmp_path, capsys):
    for text in ("", "   \n", '{"resourceSpans": [', "not json\nat all\n", "42"):
        path = tmp_path / "bad.json"
        path.write_text(text)
        _refused(tmp_path, capsys, path)


def test_an_unknown_shape_names_the_candidates(tmp_path, capsys):
    path = tmp_path / "what.json"
    path.write_text(json.dumps({"hello": "world"}))
    err = _refused(tmp_path, capsys, path)
    assert "cannot tell the format" in err and "otel-genai" in err and "tau2" in err


def test_a_file_fitting_two_formats_names_both(tmp_path, capsys):
    path = tmp_path / "both.json"
    span = {"gen_ai.operation.name": "chat", "openinference.span.kind": "LLM"}
    path.write_text(json.dumps(span))
    err = _refused(tmp_path, capsys, path)
    assert "openinference or otel-genai" in err


def _paths(node: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield path
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _paths(value, (*path, key))
    elif isinstance(node, list):
        for k, value in enumerate(node):
            yield from _paths(value, (*path, k))


def _replaced(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    copy = orjson.loads(orjson.dumps(doc))
    node = copy
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return copy


WRONG = (None, -1, 2**60, 1e300, "x\x1b[2J<script>", [], {}, True)


@pytest.mark.parametrize("rel", FILES)
def test_every_value_of_the_wrong_type_is_refused_or_imported(rel):
    doc = orjson.loads((FIXTURES / rel).read_bytes())
    paths = list(_paths(doc))
    picked = paths[:: max(1, len(paths) // 60)]  # about 60 places spread over the file
    tried = 0
    for path in picked:
        for value in WRONG:
            mutated = _replaced(doc, path, value)
            try:
                runs = parse_runs(mutated, FORMAT_OF[rel], Path(rel))
                episodes, steps, _ = log_rows(runs, None, "agent", "task")
            except TraceFormatError:
                continue
            tried += 1
            for row in episodes:
                assert problems(dict(row), EpisodeRow) == [], (path, value)
            for row in steps:
                assert problems(dict(row), StepRow) == [], (path, value)
    assert tried > 0


def test_names_that_look_like_html_or_paths_stay_data(tmp_path, capsys):
    doc = json.loads((FIXTURES / "tau2/results.json").read_text())
    doc["simulations"][0]["task_id"] = "../../../etc/passwd"
    doc["info"]["agent_info"]["llm"] = "<script>alert(1)</script>\x1b[2J"
    doc["simulations"][0]["messages"][2]["tool_calls"][0]["name"] = "/tmp/evil\n[red]x[/]"
    path = tmp_path / "evil.json"
    path.write_text(json.dumps(doc))
    out = tmp_path / "o"
    status, printed, err = cli(["traces", "import", path, "--out", out], capsys)
    assert status == 0, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["evil.json", "o"]
    assert not Path("/tmp/evil").exists()
    status, printed, err = cli(["traces", "compare", out], capsys)
    assert status == 0, err
    assert "\x1b" not in printed and "\\x1b" in printed  # shown, not acted on
    status, _, err = cli(["report", out], capsys)
    assert status == 0, err
    page = (out / "report.html").read_text()
    assert "<script>alert" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page


@pytest.mark.parametrize("rule", ["correctness", "x>=", ">=1", "x>=nan", "x=>1", "x>=1e999"])
def test_a_bad_success_score_is_one_line(tmp_path, capsys, rule):
    path = FIXTURES / "langfuse/openai-agents-2025-09-30.trace.json"
    err = _refused(tmp_path, capsys, path, "--success-score", rule)
    assert "--success-score" in err


def _tau2_turn(calls: int) -> dict[str, Any]:
    """One simulation whose one assistant turn makes ``calls`` calls, answered in reverse."""
    ids = [f"c{k}" for k in range(calls)]
    assistant = {"role": "assistant", "tool_calls": [
        {"id": i, "name": "get", "arguments": {"k": k}} for k, i in enumerate(ids)]}  # fmt: skip
    replies = [{"role": "tool", "id": i, "content": "{}", "error": False} for i in reversed(ids)]
    return {"task_id": "t", "termination_reason": "agent_stop", "reward_info": {"reward": 1.0},
            "messages": [assistant, *replies]}  # fmt: skip


def _orphan_spans(calls: int) -> dict[str, Any]:
    """One trace of ``calls`` execute_tool spans and no model call (one turn of its own)."""
    spans = [
        {"traceId": "t", "spanId": f"s{k}", "startTimeUnixNano": str(10**18 + k),
         "endTimeUnixNano": str(10**18 + k + 1), "attributes": [
             {"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
             {"key": "gen_ai.tool.name", "value": {"stringValue": f"tool{k % 7}"}}]}
        for k in range(calls)
    ]  # fmt: skip
    return {"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}


def _parse_cpu(doc: Any, fmt: str) -> float:
    start = time.process_time()
    runs = parse_runs(doc, fmt, Path("generated"))
    log_rows(runs, None, "agent", "task")
    return time.process_time() - start


@pytest.mark.parametrize(("make", "fmt"), [(_tau2_turn, "tau2"), (_orphan_spans, "otel-genai")])
def test_matching_answers_to_calls_is_linear(make, fmt):
    # replies matched by id in reverse order, and tool spans each a call of its own: a scan
    # of the turn per answer would make 4 times the calls cost 16 times the time
    small = _parse_cpu(make(10_000), fmt)
    large = _parse_cpu(make(40_000), fmt)
    assert large < 8 * small + 0.5, (small, large)


def test_gen_ai_spans_with_llm_attributes_are_still_gen_ai(tmp_path, capsys):
    # OpenLLMetry writes llm.* beside gen_ai.*: only openinference.span.kind says OpenInference
    span = {"gen_ai.operation.name": "chat", "llm.request.type": "chat"}
    path = tmp_path / "span.json"
    path.write_text(json.dumps(span))
    status, printed, err = cli(["traces", "import", path, "--out", tmp_path / "o"], capsys)
    assert status == 0 and "imported 1 runs (otel-genai;" in printed, err


def test_the_older_formats_are_told_too(tmp_path, capsys):
    record = {"task_id": 3, "trial": 0, "reward": 1.0, "messages": [
        {"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}  # fmt: skip
    path = tmp_path / "runs.jsonl"
    path.write_text(json.dumps(record) + "\n" + json.dumps({**record, "trial": 1}) + "\n")
    status, printed, err = cli(["traces", "import", path, "--out", tmp_path / "o"], capsys)
    assert status == 0 and "imported 2 runs (openai-chat;" in printed, err
    tau = tmp_path / "tau.json"
    tau.write_text(
        json.dumps([{"task_id": 3, "trial": 0, "reward": 0.0, "traj": record["messages"]}])
    )
    status, printed, err = cli(["traces", "import", tau, "--out", tmp_path / "t"], capsys)
    assert status == 0 and "imported 1 runs (tau-bench;" in printed, err


def test_a_zip_log_is_named(tmp_path, capsys):
    path = tmp_path / "run.eval"
    path.write_bytes(b"PK\x03\x04" + b"\x00" * 100)
    err = _refused(tmp_path, capsys, path, "--format", "inspect")
    assert "inspect log convert --to json" in err
