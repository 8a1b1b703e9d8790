"""docs/quickstart.md runs: its Python blocks, in order, in a fresh directory with experiments/.

A block preceded by ``<!-- file: NAME -->`` is written to NAME instead of run.
"""

from __future__ import annotations

import re
import runpy

from tests.conftest import EXPERIMENTS, ROOT

QUICKSTART = ROOT / "docs" / "quickstart.md"
README = ROOT / "README.md"
BLOCK = re.compile(r"(?:<!-- file: (?P<file>\S+) -->\n)?```python\n(?P<code>.*?)```", re.S)


def blocks(page=QUICKSTART) -> list[tuple[str | None, str]]:
    return [(m["file"], m["code"]) for m in BLOCK.finditer(page.read_text("utf-8"))]


def test_the_quickstart_has_code_and_a_file_block():
    found = blocks()
    assert len(found) >= 5
    assert [name for name, _ in found if name] == ["my_law.py"]


def test_the_quickstart_runs(tmp_path, monkeypatch, capsys):
    (tmp_path / "experiments").symlink_to(EXPERIMENTS)
    monkeypatch.chdir(tmp_path)
    script = []
    for name, code in blocks():
        if name:
            (tmp_path / name).write_text(code, encoding="utf-8")
        else:
            script.append(code)
    (tmp_path / "quickstart.py").write_text("\n".join(script), encoding="utf-8")
    namespace = runpy.run_path(str(tmp_path / "quickstart.py"), run_name="__main__")
    assert (tmp_path / "runs" / "quickstart" / "progress.png").is_file()
    assert (tmp_path / "runs" / "compare" / "metrics.json").is_file()
    assert namespace["run"].summary["pid"]["episodes"] == 40
    printed = capsys.readouterr().out
    assert "my_law.py:Patient" in printed


def test_the_readmes_python_runs(tmp_path, monkeypatch):
    (tmp_path / "experiments").symlink_to(EXPERIMENTS)
    monkeypatch.chdir(tmp_path)
    (code,) = [code for _, code in blocks(README)]
    namespace = runpy.run_path(_write(tmp_path / "readme.py", code), run_name="__main__")
    assert namespace["run"].summary["pid"]["episodes"] == 50
    assert (tmp_path / "runs" / "py" / "episodes.jsonl").is_file()


def _write(path, code):
    path.write_text(code, encoding="utf-8")
    return str(path)
