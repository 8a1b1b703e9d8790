"""The glossary page and ``opar-sim glossary`` say the same, and every term is there."""

from __future__ import annotations

from opar_sim.cli import main
from opar_sim.cli.glossary import GLOSSARY
from tests.conftest import ROOT


def test_the_page_lists_every_term_with_its_meaning():
    page = (ROOT / "docs" / "glossary.md").read_text(encoding="utf-8")
    for term, text in GLOSSARY.items():
        assert f"- **{term}**: {text}." in page


def test_the_command_looks_a_term_up_and_refuses_an_unknown_one(capsys):
    assert main(["glossary", "pass^k"]) == 0
    out = capsys.readouterr().out
    assert "pass^k" in out and "pace error" not in out
    for must in (
        "δ_task",
        "δ_act",
        "δ_plan",
        "pace error",
        "settle rule",
        "settling time",
        "confirm",
        "screened",
        "regret",
    ):
        assert any(must in term for term in GLOSSARY), must
    assert main(["glossary", "frobnicate"]) == 2
    assert "no term contains 'frobnicate'" in capsys.readouterr().err
