"""The README's worked example runs as written (with a smaller budget) and ends in a recommendation.

Issue 28: a newcomer who follows the README must end with "use law X with gains Y" (or "keep
your current gains"), never a table to interpret alone.
"""

from __future__ import annotations

import re
import shlex

from opar_sim.cli import main
from tests.conftest import ROOT

README = ROOT / "README.md"
# the same commands with a budget the suite affords; the README's own take minutes
SMALLER = {
    "compare": ["--episodes", "40", "--engine", "batch"],
    "tune": ["--trials", "3", "--replicates", "2", "--engine", "batch"],
}


def _example_commands() -> list[list[str]]:
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## A worked example") : text.index("## From Python")]
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", section, re.S):
        for line in block.splitlines():
            words = shlex.split(line.split("#")[0])
            if words and words[0].endswith("opar-sim"):
                commands.append(words[1:])
    return commands


def test_the_worked_example_ends_in_a_recommendation(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    commands = _example_commands()
    assert [c[0] for c in commands] == ["compare", "tune"]
    outputs = []
    for k, argv in enumerate(commands):
        extra = [*SMALLER[argv[0]], "--workers", "1", "--out", str(tmp_path / str(k))]
        assert main([*argv, *extra]) == 0
        outputs.append(capsys.readouterr().out)
    assert "paired differences to pid" in outputs[0]
    last = outputs[-1]
    block = last[last.rindex("recommendation") :]
    assert "verdict" in block and ("use the tuned gains" in block or "keep your current" in block)
    assert "held-out success" in block and "replicates beating current" in block
    assert (tmp_path / "1" / "best.toml").is_file()
