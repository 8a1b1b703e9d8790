"""optuna-dashboard opens a ``tune`` study file: the journal ``tune`` writes is Optuna's own."""

from __future__ import annotations

import io
import json
import sys

import pytest

from opar_sim.cli.main import main
from opar_sim.running.journal import JOURNAL_FILE, journal_storage
from tests.conftest import EXPERIMENTS

TUNE = """
[tune]
trials = 4
train_episodes = 5
holdout_episodes = 5

[tune.space]
"controller.params.kp" = { low = 0.2, high = 3.0, log = true }
"""


def _get(app, path: str) -> tuple[str, bytes]:
    """One GET against a WSGI app, no server: (status, body)."""
    seen: dict[str, str] = {}

    def start_response(status, headers, exc_info=None):
        seen["status"] = status

    environ = {
        "REQUEST_METHOD": "GET",
        "PATH_INFO": path,
        "QUERY_STRING": "",
        "SERVER_NAME": "localhost",
        "SERVER_PORT": "0",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(),
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": False,
        "wsgi.multiprocess": False,
        "wsgi.run_once": False,
    }
    body = b"".join(app(environ, start_response))
    return seen["status"], body


def test_optuna_dashboard_lists_the_tune_study_and_its_trials(tmp_path, capsys):
    dashboard = pytest.importorskip("optuna_dashboard")
    spec = tmp_path / "tune.toml"
    base = (EXPERIMENTS / "flight_booking.toml").read_text()
    spec.write_text(base + TUNE)
    out = tmp_path / "t"
    argv = ["tune", str(spec), "--replicates", "2", "--workers", "1", "--out", str(out)]
    assert main(argv) == 0
    journal = out / "replicate_1" / JOURNAL_FILE  # one journal per replicate, one study each
    assert journal.is_file()
    app = dashboard.wsgi(journal_storage(journal, resume=False))
    status, body = _get(app, "/api/studies")
    assert status.startswith("200")
    studies = json.loads(body)["study_summaries"]
    assert len(studies) == 1
    study_id = studies[0]["study_id"]
    status, body = _get(app, f"/api/studies/{study_id}")
    assert status.startswith("200")
    trials = json.loads(body)["trials"]
    assert len(trials) == 4 and all(t["state"] == "Complete" for t in trials)
