"""No dead ends: a misspelt flag, choice or command names the nearest; specs a command cannot
use are refused in one line that says what to run instead."""

from __future__ import annotations

import pytest

from opar_sim.cli.main import main
from tests.conftest import SPEC

CASES = {
    "flag": (["run", SPEC, "--episdoes", "5"], "(did you mean '--episodes'?)"),
    "flag of compare": (["compare", SPEC, "--controlers", "a"], "(did you mean '--controllers'?)"),
    "flag with a value": (["run", SPEC, "--sed=3"], "(did you mean '--seed'?)"),
    "choice": (["run", SPEC, "--engine", "bath"], "(did you mean 'batch'?)"),
    "command": (["compar", SPEC], "(did you mean 'compare'?)"),
    "tune without [tune]": (["tune", SPEC], "start from experiments/tune_pid.toml"),
    "shootout on a sweep": (
        ["shootout", "experiments/controller_shootout.toml"],
        "shootout does not read [sweep] or [[compare]]",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_one_line_that_names_the_way_out(case, capsys):
    argv, expected = CASES[case]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert expected in err and len(err.strip().splitlines()) == 1, err


def test_a_flag_near_nothing_gets_no_guess(capsys):
    assert main(["run", SPEC, "--zzzz"]) == 2
    assert capsys.readouterr().err.strip() == "opar-sim: error: unrecognized arguments: --zzzz"


def test_a_suggestion_is_never_the_flag_itself():
    from opar_sim.cli.main import build_parser, suggestion

    parser = build_parser("*")
    assert suggestion(parser, "unrecognized arguments: --episdoes 5") == (
        " (did you mean '--episodes'?)"
    )
    assert "'--wide'" not in suggestion(parser, "unrecognized arguments: --wide")
