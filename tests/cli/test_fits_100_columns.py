"""Every command's default output fits 100 columns: no cut cell (…), no interval split.

On a 100-column terminal every line fits; piped, the tables are fitted to 100 columns
(``main.PIPED_WIDTH``) while a line of text stays whole.  The tables fit by wrapping text
between words and dropping the columns of least priority, named in a note; ``--wide``
prints every column.
"""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path
from unittest import mock

import pytest
from rich.cells import cell_len
from rich.console import Console

from opar_sim.cli.console import SafeConsole
from opar_sim.cli.main import main
from opar_sim.measure.table import TextTable, chunks, table_width, wrap
from tests.conftest import SPEC

WIDTH = 100
INTERVAL = re.compile(r"\[[^\[\]]*\]")


def _terminal(wide: bool = False) -> SafeConsole:
    """The console of a 100-column terminal (``main._console``'s terminal branch)."""
    return SafeConsole(width=1000 if wide else WIDTH)


def _printed(argv: list[str], terminal: bool = True) -> str:
    """What ``opar-sim ARGV`` prints on a 100-column terminal (else piped)."""
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer), contextlib.ExitStack() as stack:
        if terminal:
            stack.enter_context(mock.patch("opar_sim.cli.main._console", _terminal))
        assert main(argv) == 0, argv
    return buffer.getvalue()


def _check(text: str) -> None:
    """No line wider than 100, no ellipsis, every ``[`` closed on its own line."""
    for line in text.splitlines():
        assert cell_len(line) <= WIDTH, line
        assert "…" not in line, line
        assert line.count("[") == line.count("]"), f"an interval split: {line!r}"


def _render(table: TextTable, width: int = WIDTH) -> str:
    console = Console(file=io.StringIO(), width=width, color_system=None)
    console.print(table)
    return console.file.getvalue()  # type: ignore[attr-defined]


WIDE_ROWS = [
    ["fixed_interval", "100", "50.0% [40.4, 59.6]", "8.8", "75,070", "87.1%", "11.0%", "+42.0"],
    ["pid", "100", "69.0% [59.4, 77.2]", "9.8", "60,526", "20.8%", "11.0%", "+23.0"],
]
WIDE_COLUMNS = [
    "controller",
    "n",
    "success (95% CI)",
    "steps",
    "tokens",
    "thrash share of REPLANs",
    "cycles share of episodes",
    "regret to the oracle (pp)",
]


def test_a_wide_table_drops_its_least_columns_and_says_so():
    table = TextTable("t", WIDE_COLUMNS, WIDE_ROWS, [], priority=(0, 2, 0, 1, 0, 3, 3, 1))
    assert table_width([len(c) for c in WIDE_COLUMNS]) > 60
    fitted = table.fit(60)
    assert fitted.columns == ["controller", "success (95% CI)", "steps", "tokens"]
    assert fitted.rows[1] == ["pid", "69.0% [59.4, 77.2]", "9.8", "60,526"]
    assert fitted.notes[-1] == (
        "not shown at 60 columns: n, thrash share of REPLANs, cycles share of episodes, "
        "regret to the oracle (pp) (--wide shows every column)"
    )
    text = _render(table, 60)
    assert "69.0% [59.4, 77.2]" in text
    assert all(cell_len(line) <= 60 for line in text.splitlines())
    # wide enough: nothing dropped, nothing wrapped
    assert table.fit(1000) == table


def test_text_wraps_between_words_never_inside_an_interval():
    assert chunks("a [1, 2] b, c") == ["a", "[1, 2]", "b,", "c"]
    assert wrap("kp=2.3, ki=0.17, kd=1.6", 10) == "kp=2.3,\nki=0.17,\nkd=1.6"
    assert wrap("x [-0.0962, +0.2251] y", 8) == "x\n[-0.0962, +0.2251]\ny"
    table = TextTable("g", ["term", "meaning"], [["δ_task", "word " * 40]], [], left=2)
    fitted = table.fit(WIDTH)
    assert fitted.rows[0][0] == "δ_task" and "\n" in fitted.rows[0][1]
    assert max(len(line) for line in fitted.rows[0][1].split("\n")) <= WIDTH - 7 - 6 - 3


@pytest.fixture(scope="module")
def compared(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    out = tmp_path_factory.mktemp("fit") / "cmp"
    argv = ["compare", SPEC, "--controllers", "pid,threshold,confidence,oracle"]
    printed = _printed([*argv, "--episodes", "30", "--workers", "1", "--out", str(out)])
    return out, printed


def test_compare_fits_and_keeps_every_interval_whole(compared, tmp_path):
    _, printed = compared
    _check(printed)
    assert "paired differences to pid" in printed
    assert re.search(r"pid +│ +\d+\.\d% \[\d+\.\d, \d+\.\d\]", printed)  # success whole
    assert "not shown at 100 columns" in printed and "--wide" in printed
    argv = ["compare", SPEC, "--controllers", "pid,oracle", "--episodes", "10", "--detail"]
    detail = _printed([*argv, "--trials", "2", "--out", str(tmp_path / "d")])
    _check(detail)
    assert "convergence and oscillation" in detail and "successes per world" in detail


def test_compare_wide_shows_every_column(tmp_path):
    argv = ["compare", SPEC, "--controllers", "pid,threshold,oracle", "--episodes", "10"]
    printed = _printed([*argv, "--out", str(tmp_path / "w"), "--wide", "--detail"])
    assert "not shown at" not in printed
    assert "cycles" in printed and "thrash" in printed and "dwell" in printed


def test_advise_list_glossary_and_run_fit(compared, tmp_path):
    out, _ = compared
    for argv in (
        ["advise", str(out), "--of", "pid"],
        ["list"],
        ["glossary"],
        ["run", SPEC, "--episodes", "10", "--out", str(tmp_path / "run")],
    ):
        _check(_printed(argv))


def test_tune_and_its_recommendation_block_fit(tmp_path):
    spec = Path("experiments/tune_pid.toml").read_text(encoding="utf-8")
    spec = spec.replace("train_episodes = 300", "train_episodes = 10")
    spec = spec.replace("holdout_episodes = 2000", "holdout_episodes = 20")
    path = tmp_path / "tune.toml"
    path.write_text(spec, encoding="utf-8")
    argv = ["tune", str(path), "--trials", "2", "--replicates", "2", "--workers", "1"]
    printed = _printed([*argv, "--out", str(tmp_path / "t")])
    _check(printed)
    assert "recommendation" in printed and "settle_band=" in printed


def test_shootout_fits(tmp_path):
    argv = ["shootout", SPEC, "--controllers", "pid,threshold", "--trials-per-dim", "1"]
    argv += ["--replicates", "2", "--train-episodes", "10", "--holdout-episodes", "10"]
    _check(_printed([*argv, "--workers", "1", "--out", str(tmp_path / "so")]))


def test_a_table_too_wide_even_wrapped_prints_one_block_per_row():
    columns = ["check", *(f"measure {k}" for k in range(8))]
    row = ["fold 1", *(f"0.{k}8 vs 0.50 [0.25, 0.75]" for k in range(8))]
    text = _render(TextTable("held out", columns, [row], ["a note"], left=1))
    _check(text)
    lines = text.splitlines()
    assert lines[:3] == ["held out", "fold 1", "    measure 0: 0.08 vs 0.50 [0.25, 0.75]"]
    assert lines[-1] == "a note"


def test_piped_the_tables_fit_and_the_text_lines_stay_whole(tmp_path):
    out = tmp_path / "p"
    argv = ["compare", SPEC, "--controllers", "pid,threshold,oracle", "--episodes", "10"]
    printed = _printed([*argv, "--out", str(out)], terminal=False)
    tables = [line for line in printed.splitlines() if line[:1] in "┏┃┡│└"]
    assert tables and all(cell_len(line) <= WIDTH and "…" not in line for line in tables)
    assert f"metrics: {out / 'metrics.json'}" in printed.splitlines()  # one line, unwrapped


def test_wide_reaches_a_command_of_a_command(tmp_path):
    for argv in (["traces", "compare", "--wide"], ["traces", "--wide", "compare"]):
        from opar_sim.cli.main import build_parser

        parser = build_parser("traces")
        args = parser.parse_args([*argv, str(tmp_path)])
        assert args.wide is True


def test_the_help_listing_fits_100_columns(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    lines = capsys.readouterr().out.splitlines()
    assert any(line.startswith("  tune ") for line in lines)
    assert max(cell_len(line) for line in lines) <= 100
