"""Every relative link in README.md and docs/ resolves: the file exists, and so does its #anchor.

Anchors follow GitHub's rule: the heading's text, lower case, punctuation dropped, spaces as
hyphens, a repeated heading suffixed -1, -2, ...  Links inside code and HTML comments are not
links and are skipped.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from tests.conftest import ROOT

PAGES = [
    ROOT / "README.md",
    *sorted((ROOT / "docs").glob("*.md")),
    *sorted((ROOT / "docs" / "notes").glob("*.md")),
]
LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^(```|~~~).*?^\1\s*$", re.S | re.M)
COMMENT = re.compile(r"<!--.*?-->", re.S)
INLINE_CODE = re.compile(r"`[^`\n]*`")


def _prose(text: str) -> str:
    return INLINE_CODE.sub("", COMMENT.sub("", FENCE.sub("", text)))


def slug(heading: str) -> str:
    text = re.sub(r"[`*_]|<[^>]+>", "", heading).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    seen: Counter[str] = Counter()
    found = set()
    for line in FENCE.sub("", page.read_text(encoding="utf-8")).splitlines():
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m:
            base = slug(m[1])
            found.add(base if seen[base] == 0 else f"{base}-{seen[base]}")
            seen[base] += 1
    return found


def links(page: Path) -> list[str]:
    return LINK.findall(_prose(page.read_text(encoding="utf-8")))


def test_the_slug_rule():
    assert slug("What `make run` shows") == "what-make-run-shows"
    assert slug("Fair comparison: `shootout`, `ablate`, repeated trials") == (
        "fair-comparison-shootout-ablate-repeated-trials"
    )
    assert slug("Simulated agent: agent.params") == "simulated-agent-agentparams"


def test_the_checker_sees_links_and_skips_code(tmp_path):
    page = tmp_path / "p.md"
    page.write_text("[a](x.md#y) `[b](no.md)`\n```\n[c](no.md)\n```\n<!-- [d](no.md) -->\n")
    assert links(page) == ["x.md#y"]


def test_there_are_pages_and_links():
    assert {p.name for p in PAGES} >= {"README.md", "quickstart.md", "results.md", "design.md"}
    assert sum(len(links(p)) for p in PAGES) > 40


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_resolves(page):
    broken = []
    for target in links(page):
        if re.match(r"^[a-z]+:", target):  # http:, https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        where = (page.parent / path).resolve() if path else page
        if not where.exists():
            broken.append(f"{target}: no such file")
        elif anchor and where.suffix == ".md" and anchor not in anchors(where):
            broken.append(f"{target}: no heading #{anchor} in {where.name}")
    assert broken == []
