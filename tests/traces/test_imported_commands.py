"""replay --laws, advise, traces compare, report and calibrate on every imported fixture.

Each fixture is imported (with ``--success-score`` where the file carries a score), then
``replay --laws calls:8,repeat:2``, ``traces compare``, ``report`` and ``advise`` run on it
(``advise`` on a record without a success shows what each cap saves and says why no cap
can keep a success, naming ``--success-score`` when the format recorded none);
``calibrate`` names what it cannot fit from the format.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from opar_sim.rundir import read_json
from opar_sim.traces import import_traces
from opar_sim.traces.runs import calibration_limits
from tests.reliability.conftest import cli
from tests.traces.test_formats_import import FIXTURES, FORMAT_OF

SCORES = {  # the score that means success, where the file has one
    "otel-genai/weather_agent.otlp.json": "correctness>=1",
    "langfuse/openai-agents-2025-09-30.trace.json": "hallucination<=0",
}
SUCCEEDS = {  # successes after the import: the rest record none
    "otel-genai/weather_agent.otlp.json",
    "langfuse/openai-agents-2025-09-30.trace.json",
    "inspect/2025-05-12T20-27-36-04-00_browser.json",
    "tau2/results.json",
}


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("imported")
    out = {}
    for k, rel in enumerate(sorted(FORMAT_OF)):
        out[rel] = root / f"run{k}"
        import_traces(FIXTURES / rel, None, out[rel], success_score=SCORES.get(rel))
    return out


@pytest.mark.parametrize("rel", sorted(FORMAT_OF))
def test_replay_compare_and_report_run(imported, rel, capsys):
    path = imported[rel]
    status, _, err = cli(["replay", path, "--laws", "calls:8,repeat:2"], capsys)
    assert status == 0, err
    laws = read_json(path / "replay_laws.json")
    assert [law["law"] for law in laws] == ["calls:8", "repeat:2"]
    assert all((law["successes"] > 0) == (rel in SUCCEEDS) for law in laws)
    status, printed, err = cli(["traces", "compare", path], capsys)
    assert status == 0 and "runs (tasks)" in printed, err
    status, _, err = cli(["report", path], capsys)
    assert status == 0, err
    page = (path / "report.html").read_text()
    assert f"<code>{FORMAT_OF[rel]}</code>" in page and "<script" not in page


@pytest.mark.parametrize("rel", sorted(FORMAT_OF))
def test_advise_runs_and_says_when_no_success_is_recorded(imported, rel, capsys):
    status, printed, err = cli(["advise", imported[rel]], capsys)
    assert status == 0, err
    advice = read_json(imported[rel] / "advise.json")
    if rel in SUCCEEDS:
        assert "smallest caps keeping 99% of the recorded successes" in printed
        assert "restarts" in advice and "note" not in advice
        return
    text = " ".join(printed.split())
    assert "no recorded success, so no cap can keep one" in text and "--success-score" in text
    assert "restarts" not in advice and all(r["kept_share"] is None for r in advice["calls"])


def test_advise_on_swe_agent_counts_by_hand(imported):
    # one run of 5 calls: a cap of k calls saves (5 - k) / 5 of them
    advice = read_json(imported["swe-agent/swe-agent__test-repo-i1.traj"] / "advise.json")
    assert [r["saved"]["mean"] for r in advice["calls"]] == pytest.approx([0.8, 0.6, 0.4, 0.2, 0.0])


def test_replay_on_tau2_counts_by_hand(imported):
    # run (0, 1) succeeds at its 4th turn (its last tool call) and repeats update_address
    # there with the same arguments: repeat:2 fires at turn 4 of 5 and keeps the success;
    # no run makes 8 calls
    laws = {
        law["law"]: law for law in read_json(imported["tau2/results.json"] / "replay_laws.json")
    }
    assert (laws["calls:8"]["kept"], laws["calls:8"]["fired"]) == (1, 0)
    assert (laws["repeat:2"]["kept"], laws["repeat:2"]["fired"]) == (1, 1)


def test_calibrate_names_what_a_format_cannot_give(imported):
    swe = calibration_limits(imported["swe-agent/swe-agent__test-repo-i1.traj"])
    assert "an imported swe-agent record" in swe[0]
    assert "estimated from text (characters / 4), not recorded" in swe[1]
    assert "--success-score" in swe[1]  # its one run's outcome is unknown
    inspect = calibration_limits(imported["inspect/2025-05-12T20-27-36-04-00_browser.json"])
    assert "recorded per step" in inspect[1] and "--success-score" not in inspect[1]
    assert calibration_limits(FIXTURES) == []  # not an import


def test_runs_without_a_turn_still_go_through_every_command(tmp_path, capsys):
    # a Langfuse trace of SPANs only (no GENERATION) scored ok: one success of no turn
    doc = json.loads((FIXTURES / "langfuse/pydantic-ai-tools-2025-06-06.trace.json").read_text())
    doc["observations"] = [o for o in doc["observations"] if o["type"] != "GENERATION"]
    doc["trace"]["scores"] = [{"name": "ok", "value": 1}]
    source = tmp_path / "spans_only.json"
    source.write_text(json.dumps(doc))
    out = tmp_path / "run"
    import_traces(source, None, out, success_score="ok>=1")
    for argv in (["replay", out, "--laws", "calls:8,repeat:2"], ["traces", "compare", out],
                 ["report", out]):  # fmt: skip
        status, _, err = cli(argv, capsys)
        assert status == 0, (argv, err)
    status, printed, err = cli(["advise", out], capsys)
    assert status == 0, err
    assert "no restart to study within a budget of 1 turn(s)" in " ".join(printed.split())
