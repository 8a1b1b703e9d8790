"""Each public fixture imports with the counts worked out by hand from the file.

The expected numbers below were read off the fixture files (tests/fixtures/*/), not from
the importer: steps are the model-call spans / assistant messages / trajectory entries,
tool calls the tool spans and requested calls, tokens the recorded usage (or, where a
format has none per step, characters / 4 of the text, rounded up), and outcomes the
format's own stop reason and score mapped as docs/traces.md tables them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from opar_sim.rundir import read_json, read_jsonl
from opar_sim.rundir.schema import EpisodeRow, StepRow, problems
from opar_sim.traces import import_traces
from opar_sim.traces.detect import detect, load_document

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _import(tmp_path: Path, rel: str, fmt: str | None = None, **kw: Any) -> Path:
    out = tmp_path / "run"
    import_traces(FIXTURES / rel, fmt, out, **kw)
    for row in read_jsonl(out / "episodes.jsonl"):
        assert problems(row, EpisodeRow) == []
    for row in read_jsonl(out / "steps.jsonl"):
        assert problems(row, StepRow) == []
    return out


def _rows(out: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    return list(read_jsonl(out / "episodes.jsonl")), list(read_jsonl(out / "steps.jsonl"))


FORMAT_OF = {
    "otel-genai/otel_genai_client_span_tool_calls.json": "otel-genai",
    "otel-genai/otel_genai_tool_execution_span.json": "otel-genai",
    "otel-genai/weather_agent.otlp.json": "otel-genai",
    "openinference/openinference_client_span_tool_calls.json": "openinference",
    "langfuse/openai-agents-2025-09-30.trace.json": "langfuse",
    "langfuse/pydantic-ai-tools-2025-06-06.trace.json": "langfuse",
    "inspect/2025-05-12T20-27-36-04-00_browser.json": "inspect",
    "inspect/log_tool_call_error.json": "inspect",
    "swe-agent/swe-agent__test-repo-i1.traj": "swe-agent",
    "tau2/results.json": "tau2",
}


@pytest.mark.parametrize(("rel", "fmt"), sorted(FORMAT_OF.items()))
def test_each_fixture_format_is_told_from_the_file(rel: str, fmt: str) -> None:
    path = FIXTURES / rel
    assert detect(load_document(path), path) == fmt


def test_otel_genai_chat_span_alone(tmp_path: Path) -> None:
    # one chat span: one turn; its output is text (finish_reason stop), so no call of its
    # own (the get_weather call in its input history was an earlier, untraced turn)
    episodes, steps = _rows(_import(tmp_path, "otel-genai/otel_genai_client_span_tool_calls.json"))
    assert [(s["step"], s["tool_calls"], s["tokens"], s["user_turns"]) for s in steps] == [
        (1, 0, 97 + 52, 1)
    ]
    (e,) = episodes
    assert (e["outcome"], e["success"], e["prompt_tokens"], e["completion_tokens"]) == (
        "unknown",
        False,
        97,
        52,
    )
    assert e["agent"] == "gpt-4-0613"


def test_openinference_gives_the_same_step_as_the_same_span_in_gen_ai(tmp_path: Path) -> None:
    oi = _import(tmp_path / "oi", "openinference/openinference_client_span_tool_calls.json")
    genai = _import(tmp_path / "ga", "otel-genai/otel_genai_client_span_tool_calls.json")
    assert _rows(oi)[1] == _rows(genai)[1]
    assert _rows(oi)[0][0]["tokens"] == 149


def test_otel_genai_tool_span_alone_is_a_turn_of_its_own(tmp_path: Path) -> None:
    episodes, steps = _rows(_import(tmp_path, "otel-genai/otel_genai_tool_execution_span.json"))
    assert [(s["tool"], s["tool_calls"], s["tool_error"]) for s in steps] == [
        ("get_weather", 1, None)
    ]
    assert episodes[0]["tool_calls"] == 1
    assert read_json(tmp_path / "run" / "source.json")["step_tokens"] == "estimated"


def test_otel_genai_traces_reassembled_from_parent_and_child_spans(tmp_path: Path) -> None:
    out = _import(tmp_path, "otel-genai/weather_agent.otlp.json")
    episodes, steps = _rows(out)
    # trace 1: chat (60 in, 18 out, requests get_weather 1234), execute_tool 1234 (0.4 s),
    # chat (97 in, 52 out); trace 2: chat (40 in, 10 out), execute_tool failed; root failed
    assert [(s["episode"], s["step"], s["tool"], s["tokens"]) for s in steps] == [
        (0, 1, "get_weather", 78),
        (0, 2, None, 227),
        (1, 1, "get_weather", 50),
    ]
    assert steps[0]["latency"] == 0.4 and steps[2]["latency"] == 29.0
    assert [s["tool_error"] for s in steps] == [None, None, "TimeoutError"]
    assert [(e["outcome"], e["tool_calls"], e["tokens"], e["wall_seconds"]) for e in episodes] == [
        ("unknown", 1, 227, 3.0),
        ("error:timeout", 1, 50, 30.0),
    ]
    source = read_json(out / "source.json")
    assert source["ids"] == {
        "0": "5b8aa5a2d2c872e8321cf37308d69df2",
        "1": "0af7651916cd43dd8448eb211c80319c",
    }
    assert source["step_tokens"] == "recorded"


def test_a_named_score_turns_unknown_into_success(tmp_path: Path) -> None:
    out = _import(tmp_path, "otel-genai/weather_agent.otlp.json", success_score="correctness>=1")
    episodes, _ = _rows(out)
    # the evaluation event of trace 1 scores correctness 1.0; trace 2 failed (it keeps it)
    assert [e["outcome"] for e in episodes] == ["success", "error:timeout"]
    assert read_json(out / "summary.json")["recorded"]["success_rate"] == 0.5


def test_langfuse_openai_agents_trace(tmp_path: Path) -> None:
    episodes, steps = _rows(_import(tmp_path, "langfuse/openai-agents-2025-09-30.trace.json"))
    # two GENERATIONs (55+15, 85+29 tokens), one TOOL get_weather between them
    assert [(s["tool"], s["tool_calls"], s["tokens"]) for s in steps] == [
        ("get_weather", 1, 70),
        (None, 0, 184),
    ]
    (e,) = episodes
    assert (e["outcome"], e["steps"], e["tool_calls"], e["tokens"]) == ("unknown", 2, 1, 184)
    assert (e["prompt_tokens"], e["completion_tokens"], e["wall_seconds"]) == (140, 44, 2.19)
    assert e["task"] == "langfuse/Agent workflow"


def test_langfuse_scores_name_the_success(tmp_path: Path) -> None:
    # the trace's scores: toxicity 0.8, hallucination 0
    ok = _import(tmp_path / "a", "langfuse/openai-agents-2025-09-30.trace.json",
                 success_score="hallucination<=0")  # fmt: skip
    bad = _import(tmp_path / "b", "langfuse/openai-agents-2025-09-30.trace.json",
                  success_score="toxicity<0.5")  # fmt: skip
    absent = _import(tmp_path / "c", "langfuse/openai-agents-2025-09-30.trace.json",
                     success_score="helpfulness>=1")  # fmt: skip
    assert [_rows(p)[0][0]["outcome"] for p in (ok, bad, absent)] == [
        "success",
        "failure",
        "unknown",
    ]


def test_langfuse_pydantic_ai_trace(tmp_path: Path) -> None:
    episodes, steps = _rows(_import(tmp_path, "langfuse/pydantic-ai-tools-2025-06-06.trace.json"))
    # one GENERATION (31 in, 96 out) under two SPANs, no TOOL
    assert [(s["tool_calls"], s["tokens"]) for s in steps] == [(0, 127)]
    assert (episodes[0]["outcome"], episodes[0]["wall_seconds"]) == ("unknown", 4.795)


def test_inspect_browser_sample(tmp_path: Path) -> None:
    episodes, steps = _rows(_import(tmp_path, "inspect/2025-05-12T20-27-36-04-00_browser.json"))
    # 5 assistant messages (4 with one call each), 5 model events with usage totals
    # 1147, 1585, 2749, 3913, 6122; the includes scorer says C
    assert [s["tool"] for s in steps] == [
        "web_browser_go",
        "web_browser_click",
        "web_browser_click",
        "web_browser_click",
        None,
    ]
    assert [s["tokens"] for s in steps] == [1147, 2732, 5481, 9394, 15516]
    (e,) = episodes
    assert (e["outcome"], e["success"], e["tool_calls"], e["tokens"]) == ("success", True, 4, 15516)
    assert (e["prompt_tokens"], e["completion_tokens"], e["wall_seconds"]) == (15235, 281, 18.517)
    assert (e["agent"], e["task"]) == ("openai/gpt-4o-mini", "inspect/browser")


def test_inspect_tool_errors_keep_their_kind(tmp_path: Path) -> None:
    out = _import(tmp_path, "inspect/log_tool_call_error.json")
    episodes, steps = _rows(out)
    # eleven tool messages, each with an error, no assistant message: one turn of replies
    (step,) = steps
    assert (step["tool_calls"], step["tool_error"], step["trial"]) == (11, "parsing", 4)
    assert [c["error"] for c in step["calls"]] == [True] * 11
    assert step["repeat"] == 11  # bash with no arguments recorded, eleven times
    # estimated tokens: ten contents of "..." and one of 134 characters: (30 + 134) / 4
    assert step["tokens"] == 41
    assert (episodes[0]["outcome"], episodes[0]["tool_calls"]) == ("unknown", 11)


def test_swe_agent_trajectory(tmp_path: Path) -> None:
    out = _import(tmp_path, "swe-agent/swe-agent__test-repo-i1.traj")
    episodes, steps = _rows(out)
    assert [s["tool"] for s in steps] == ["find_file", "open", "edit", "python", "submit"]
    (e,) = episodes
    # exit_status "submitted": the patch is judged by a later evaluation -> unknown;
    # model_stats: tokens_sent 52861, tokens_received 326 (per run only)
    assert (e["outcome"], e["steps"], e["tool_calls"]) == ("unknown", 5, 5)
    assert (e["prompt_tokens"], e["completion_tokens"], e["tokens"]) == (52861, 326, 53187)
    source = read_json(out / "source.json")
    assert source["step_tokens"] == "estimated"
    assert source["stops"] == {"0/1": "submitted"}


def test_tau2_results(tmp_path: Path) -> None:
    out = _import(tmp_path, "tau2/results.json")
    episodes, steps = _rows(out)
    summary = [
        (e["episode"], e["trial"], e["outcome"], e["steps"], e["tool_calls"], e["tokens"])
        for e in episodes
    ]
    assert summary == [
        (0, 1, "success", 5, 3, 1080),  # user_stop, reward 1; usage 100+10 ... 280+30
        (0, 2, "truncated:max_steps", 4, 3, 695),  # the user's own tool call not counted
        (1, 1, "failure", 3, 1, 34),  # agent_stop, reward 0; no usage: text estimate
    ]
    first = [s for s in steps if (s["episode"], s["trial"]) == (0, 1)]
    assert [s["tokens"] for s in first] == [110, 280, 505, 770, 1080]
    assert [s["tool_error"] for s in first] == [None, None, "error", None, None]
    assert [s["repeat"] for s in first] == [0, 1, 1, 2, 0]  # same arguments, keys reordered
    second = [s for s in steps if (s["episode"], s["trial"]) == (0, 2)]
    assert [s["tool_calls"] for s in second] == [0, 2, 0, 1]
    assert [s["tokens"] for s in second] == [98, 268, 463, 695]
    # "Hi, how can I help?" 19; + user 26 + call name 18 and arguments 28; + reply 23 + 22
    third = [s for s in steps if s["episode"] == 1]
    assert [s["tokens"] for s in third] == [5, 23, 34]
    assert [e["wall_seconds"] for e in episodes] == [41.5, 63.0, 12.25]
    assert read_json(out / "source.json")["step_tokens"] == "mixed"


@pytest.mark.parametrize(
    ("status", "outcome"),
    [
        ("submitted", "unknown"),
        ("submitted (exit_cost)", "truncated:cost"),
        ("exit_context", "truncated:context"),
        ("submitted (exit_total_execution_time)", "truncated:time"),
        ("exit_format", "error:invalid_format"),
        ("exit_forfeit", "failure"),
        ("something_new", "unknown"),
    ],
)
def test_swe_agent_exit_status_maps_to_an_outcome(status: str, outcome: str) -> None:
    from opar_sim.traces.agent_logs import swe_agent_runs

    doc = load_document(FIXTURES / "swe-agent/swe-agent__test-repo-i1.traj")
    doc["info"]["exit_status"] = status
    (run,) = swe_agent_runs(doc)
    assert (run.outcome, run.stop) == (outcome, status)


@pytest.mark.parametrize(
    ("limit", "outcome"),
    [("message", "truncated:max_steps"), ("token", "truncated:tokens"),
     ("working", "truncated:time"), ("context", "truncated:context")],
)  # fmt: skip
def test_inspect_sample_limit_maps_to_truncated(limit: str, outcome: str) -> None:
    from opar_sim.traces.inspect_log import inspect_runs

    doc = load_document(FIXTURES / "inspect/2025-05-12T20-27-36-04-00_browser.json")
    doc["samples"][0]["limit"] = {"type": limit, "limit": 10}
    (run,) = inspect_runs(doc)
    assert run.outcome == outcome  # the limit wins over the C score


@pytest.mark.parametrize(
    ("reason", "reward", "outcome"),
    [("agent_stop", 1.0, "success"), ("user_stop", 0.5, "failure"),
     ("timeout", 0.0, "truncated:time"), ("context_window_exceeded", 0.0, "truncated:context"),
     ("too_many_errors", 0.0, "truncated:too_many_errors"),
     ("infrastructure_error", 0.0, "error:infrastructure_error")],
)  # fmt: skip
def test_tau2_termination_reason_maps_to_an_outcome(reason, reward, outcome) -> None:
    from opar_sim.traces.agent_logs import tau2_runs

    doc = load_document(FIXTURES / "tau2/results.json")
    doc["simulations"] = doc["simulations"][:1]
    doc["simulations"][0]["termination_reason"] = reason
    doc["simulations"][0]["reward_info"]["reward"] = reward
    (run,) = tau2_runs(doc)
    assert run.outcome == outcome
