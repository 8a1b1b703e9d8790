"""traces import on the real τ-bench runs (numbers of its README) and on bad records."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from opar_sim.cli.main import main
from opar_sim.rundir import read_json, read_jsonl
from opar_sim.traces import TraceFormatError, import_traces, parse_file
from opar_sim.traces.importer import args_hash, is_write_action
from tests.tau_bench_data import tau_bench_file


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("tau") / "run"
    import_traces(tau_bench_file(), "tau-bench", out)
    return out


def test_import_reproduces_the_readme_figures(imported: Path) -> None:
    summary = read_json(imported / "summary.json")["recorded"]
    assert summary["episodes"] == 140
    ks = {k: round(v, 3) for k, v in summary["pass_hat_k"].items()}
    assert ks == {"1": 0.45, "2": 0.295, "3": 0.229, "4": 0.2}
    assert summary["worlds_by_successes"] == [9, 7, 8, 4, 7]
    episodes = list(read_jsonl(imported / "episodes.jsonl"))
    wins = [e["tool_calls"] for e in episodes if e["success"]]
    losses = [e["tool_calls"] for e in episodes if not e["success"]]
    assert (len(wins), len(losses)) == (63, 77)
    assert round(sum(wins) / len(wins), 2) == 4.14
    assert round(sum(losses) / len(losses), 2) == 6.94


def test_rows_follow_the_contract(imported: Path) -> None:
    episodes = list(read_jsonl(imported / "episodes.jsonl"))
    steps = list(read_jsonl(imported / "steps.jsonl"))
    first = episodes[0]
    assert {k: first[k] for k in ("episode", "trial", "controller", "agent", "task")} == {
        "episode": 0,
        "trial": 1,
        "controller": "recorded",
        "agent": "gpt-4o",
        "task": "tau-bench/airline",
    }
    assert {e["trial"] for e in episodes} == {1, 2, 3, 4}
    assert all(e["feasible"] is None and e["outcome"] in ("success", "failure") for e in episodes)
    # steps: one per assistant turn (1664 in the file), tool calls add up to the episodes'
    assert len(steps) == 1664 == sum(e["steps"] for e in episodes)
    assert sum(s["tool_calls"] for s in steps) == 795 == sum(e["tool_calls"] for e in episodes)
    fields = {"episode", "trial", "controller", "step", "tool", "args_hash", "tool_error"}
    assert fields | {"user_turns", "tokens", "repeat"} <= set(steps[0])
    # 46 tool replies in the file start with "Error": the step's tool_error is "error"
    assert sum(s["tool_error"] == "error" for s in steps) == 46
    assert {s["tool_error"] for s in steps} == {"error", None}


def _counts(imported: Path, feature: str) -> dict[int, tuple[int, int]]:
    runs: dict[int, list[bool]] = {}
    for e in read_jsonl(imported / "episodes.jsonl"):
        runs.setdefault(e["task_features"][feature], []).append(e["success"])
    return {k: (sum(v), len(v)) for k, v in sorted(runs.items())}


def test_task_features_split_success(imported: Path) -> None:
    # the 75 % / 50 % / 13 % are by the number of ground-truth actions (all of them):
    # 0 actions: 12 of 16 runs, 1: 22 of 44, 4 or 5: 2 of 16
    actions = _counts(imported, "actions")
    assert actions[0] == (12, 16) and actions[1] == (22, 44)
    assert (actions[4][0] + actions[5][0], actions[4][1] + actions[5][1]) == (2, 16)
    # by write actions (the contract's definition): 46/64, 10/40, 4/24, 3/8, 0/4
    writes = _counts(imported, "write_actions")
    assert writes == {0: (46, 64), 1: (10, 40), 2: (4, 24), 3: (3, 8), 4: (0, 4)}


def test_write_actions_and_hashes() -> None:
    assert not is_write_action("get_user_details") and not is_write_action("think")
    assert not is_write_action("transfer_to_human_agents") and is_write_action("book_reservation")
    assert args_hash('{"a": 1, "b": [2]}') == args_hash({"b": [2], "a": 1})
    assert args_hash('{"a": 1}') != args_hash('{"a": 2}')


def _write(tmp_path: Path, records: list[Any]) -> Path:
    path = tmp_path / "runs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def _record(**changes: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "task_id": 3,
        "trial": 0,
        "reward": 1.0,
        "model": "my-agent",
        "actions": ["get_user_details", "cancel_reservation"],
        "messages": [
            {"role": "system", "content": "policy"},
            {"role": "user", "content": "cancel please"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "a", "function": {"name": "get_user_details", "arguments": '{"u": 1}'}}
                ],
            },
            {"role": "tool", "tool_call_id": "a", "content": "Error: user not found"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "b", "function": {"name": "get_user_details", "arguments": '{"u":1}'}}
                ],
            },
            {"role": "tool", "tool_call_id": "b", "content": "{}"},
            {"role": "assistant", "content": "Done."},
        ],
    }
    return record | changes


def test_generic_format_round_trip(tmp_path: Path) -> None:
    path = _write(tmp_path, [_record(), _record(trial=1, reward=0.0)])
    result = import_traces(path, "openai-chat", tmp_path / "out")
    assert (result.runs, result.tasks, result.trials) == (2, 1, 2)
    steps = list(read_jsonl(tmp_path / "out" / "steps.jsonl"))[:3]
    assert [s["tool"] for s in steps] == ["get_user_details", "get_user_details", None]
    assert [s["tool_error"] for s in steps] == ["error", None, None]
    assert [s["repeat"] for s in steps] == [1, 2, 0]  # same arguments, other spacing
    assert [s["user_turns"] for s in steps] == [1, 1, 1]
    tokens = [s["tokens"] for s in steps]
    assert tokens == sorted(tokens) and tokens[0] >= 1
    episode = next(read_jsonl(tmp_path / "out" / "episodes.jsonl"))
    assert episode["agent"] == "my-agent" and episode["trial"] == 1
    assert episode["task_features"] == {"actions": 2, "write_actions": 1}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"reward": None}, "run 0 (task 3, trial 0): reward: must be a number"),
        ({"reward": 2}, "run 0 (task 3, trial 0): reward: must lie in [0, 1]"),
        ({"trial": "x"}, "run 0 (task 3, trial x): trial: must be an integer"),
        ({"task_id": -1}, "run 0 (task -1, trial 0): task_id: must be an integer from 0 to"),
        ({"messages": []}, "run 0 (task 3, trial 0): messages: must be a non-empty list"),
        (
            {"messages": [{"role": "robot", "content": "x"}]},
            "run 0 (task 3, trial 0): messages[0].role: must be one of",
        ),
        (
            {"messages": [{"role": "assistant", "tool_calls": [{"function": {}}]}]},
            "run 0 (task 3, trial 0): messages[0].tool_calls[0].function.name: missing",
        ),
        ({"actions": [{"kwargs": {}}]}, "run 0 (task 3, trial 0): actions[0]: must be a tool"),
    ],
)
def test_bad_records_name_the_run_and_the_field(
    tmp_path: Path, change: dict[str, Any], message: str
) -> None:
    record = _record(**change)
    if change.get("reward", 0) is None:
        record.pop("reward")
        message = "run 0 (task 3, trial 0): reward: missing"
    path = _write(tmp_path, [record])
    with pytest.raises(TraceFormatError, match=None) as info:
        parse_file(path, "openai-chat")
    assert str(info.value).startswith(message)


def test_duplicate_trial_and_cli_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, [_record(), _record()])
    code = main(
        ["traces", "import", str(path), "--format", "openai-chat", "--out", str(tmp_path / "o")]
    )
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert err == (
        "opar-sim: error: run 1 (task 3, trial 0): trial: task and trial already recorded by run 0"
    )
    assert not (tmp_path / "o").exists()
    assert main(["traces", "import", str(path), "--format", "nope", "--out", "x"]) == 2
    (tmp_path / "bad.jsonl").write_text("{not json\n", encoding="utf-8")
    code = main(
        [
            "traces",
            "import",
            str(tmp_path / "bad.jsonl"),
            "--format",
            "openai-chat",
            "--out",
            str(tmp_path / "p"),
        ]
    )
    assert code == 2
    assert "line 1: not valid JSON" in capsys.readouterr().err
