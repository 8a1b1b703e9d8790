"""A shared run directory is data, never code: no script of its own runs in ``report.html``.

Issue 31: a payload planted in any string of any file the report reads (spec.json,
episodes.jsonl, steps.jsonl, replay_*.jsonl and its name, figures/figures.json, a
figures/*.svg newer than the run files, the run directory's own name) must reach the page
as text.  The browser test opens the report of such a run in headless Chromium with the
network off (``tests/browser.py``, the harness ``tests/cli/test_report_browser.py`` uses
too), clicks every episode, hovers every figure, follows ``#episode=`` links, and finds
that no planted script ran, no dialog opened and no request left the page, while the
page's own script still did its work.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import io
import json
import os
import re
import shutil
import urllib.parse
import xml.parsers.expat
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from opar_sim.cli.main import main
from opar_sim.measure.run import analyze
from tests.browser import CHROMIUM, FLAGS, browser_or_skip
from tests.conftest import SPEC

PWN = "window.__pwned=1"
PAYLOADS = (
    f'"><img src=x onerror={PWN};alert(1)>',
    "<!--<script>",
    f"</script><script>{PWN}</script>",
    f"javascript:{PWN}",
    f"' onmouseover='{PWN}' x='",
    f"<svg onload={PWN}>",
    f'" onmouseover="{PWN}" x="',
    f"]]><x onclick={PWN}>",
    "\u2028\u2029",
    f"&lt;img src=x onerror={PWN}&gt;",
    f"${{{PWN}}}",
    "a\"b'c`d\\e",
)
# controllers get names that break an attribute, a selector, the key split and the JSON block
NAMES = {
    "pid": f'pid"><img src=x onerror={PWN}>',
    "threshold": f"threshold' onmouseover='{PWN}' x='|x--y</script><script>{PWN}</script>"
    "<!--<script>",
}
PLANTED_SVG = f"""<?xml version="1.0" encoding="utf-8" standalone="no"?>
<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink"
     width="200pt" height="100pt" viewBox="0 0 200 100" onload="{PWN}">
 <script>{PWN}</script>
 <script type="text/javascript"><![CDATA[{PWN}]]></script>
 <defs><style type="text/css">*{{stroke-linejoin: round}} @import url(http://evil.invalid/x.css);</style></defs>
 <g id="ctl--pid--pareto-x" onmouseover="{PWN}" style="fill: url(http://evil.invalid/x)">
  <path d="M 0 0 L 200 100 z" style="fill: #ff0000"/>
  <rect x="0" y="0" width="200" height="100" onclick="{PWN}" fill="#eee"/>
 </g>
 <foreignObject width="200" height="100"><body xmlns="http://www.w3.org/1999/xhtml">
  <img src="x" onerror="{PWN}"/></body></foreignObject>
 <a xlink:href="javascript:{PWN}"><rect width="50" height="50"/></a>
 <a href="javascript:{PWN}"><text x="5" y="50">click</text></a>
 <image xlink:href="http://evil.invalid/beacon.png" width="10" height="10"/>
 <image href="data:text/html;base64,{base64.b64encode(f"<script>{PWN}</script>".encode()).decode()}"
  />
 <use xlink:href="data:image/svg+xml;base64,PHN2Zz48L3N2Zz4=#x"/>
 <animate attributeName="href" to="javascript:{PWN}" begin="0s" onbegin="{PWN}"/>
 <set attributeName="onmouseover" to="{PWN}"/>
 <iframe src="javascript:{PWN}"/>
 <text x="10" y="90">&lt;img src=x onerror={PWN}&gt;</text>
</svg>
"""


class _Poison:
    """Appends a payload to every string: names one fixed payload each, other text in turn."""

    def __init__(self) -> None:
        self.k = 0
        self.names = dict(NAMES)

    def name(self, value: str) -> str:
        if value not in self.names:
            self.names[value] = value + PAYLOADS[len(self.names) % len(PAYLOADS)]
        return self.names[value]

    def text(self, value: str) -> str:
        self.k += 1
        return value + PAYLOADS[self.k % len(PAYLOADS)]

    def __call__(self, value: Any, key: str | None = None) -> Any:
        if isinstance(value, str):
            named = key in ("controller", "recorded_controller", "agent", "task", "name")
            return self.name(value) if named else self.text(value)
        if isinstance(value, list):
            return [self(v) for v in value]
        if isinstance(value, dict):
            return {k: self(v, k) for k, v in value.items()}
        return value


def _rewrite_jsonl(path: Path, change: Any) -> None:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    path.write_text("".join(json.dumps(change(r)) + "\n" for r in rows), encoding="utf-8")


def _poison_spec(path: Path, poison: _Poison) -> int:
    """Every string leaf of spec.json that the spec still accepts poisoned; return how many."""
    from opar_sim.spec.schema import ExperimentSpec

    data = json.loads(path.read_text(encoding="utf-8"))
    planted = 0

    def leaves(node: Any, trail: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        if isinstance(node, dict):
            return [t for k, v in node.items() for t in leaves(v, (*trail, k))]
        if isinstance(node, list):
            return [t for k, v in enumerate(node) for t in leaves(v, (*trail, k))]
        return [trail] if isinstance(node, str) else []

    for trail in leaves(data):
        holder = data
        for step in trail[:-1]:
            holder = holder[step]
        old = holder[trail[-1]]
        holder[trail[-1]] = poison(old, trail[-1] if isinstance(trail[-1], str) else None)
        try:
            ExperimentSpec.model_validate_json(json.dumps(data))
        except ValueError:
            holder[trail[-1]] = old  # refused by the spec's own checks: never reaches the page
        else:
            planted += 1
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return planted


def _poison_run(src: Path, dest: Path, *, damaged_index: bool) -> dict[str, Any]:
    """A copy of ``src`` with a payload in every string the report reads."""
    shutil.copytree(src, dest)
    poison = _Poison()
    # the manifest vouches for the original bytes: an attacker would drop or rewrite it
    (dest / "manifest.jsonl").unlink(missing_ok=True)
    spec_planted = _poison_spec(dest / "spec.json", poison)

    def step(row: dict[str, Any]) -> dict[str, Any]:
        # the analysis counts REPLAN signals against the enacted replans (a mismatch is
        # refused): those stay, every other signal carries a payload
        replan = row.get("signal") == "replan"
        row = poison(row)
        if replan:
            row["signal"] = "replan"
        terms = row.get("terms")
        if isinstance(terms, dict):
            terms[PAYLOADS[0]] = 0.5
            terms["__proto__"] = 0.25
        return row

    _rewrite_jsonl(dest / "episodes.jsonl", poison)
    _rewrite_jsonl(dest / "steps.jsonl", step)
    for replay in list(dest.glob("replay_*.jsonl")):
        _rewrite_jsonl(replay, poison)
        replay.rename(dest / f"replay_{PAYLOADS[0]}.jsonl")
    figures = dest / "figures"
    index = json.loads((figures / "figures.json").read_text(encoding="utf-8"))
    index["captions"] = {stem: poison.text(text) for stem, text in index["captions"].items()}
    index["raster"] = {poison.name(c): v for c, v in index["raster"].items()}
    if damaged_index:  # stems and rows the code never wrote: the figures are drawn afresh
        bad = PAYLOADS[0]
        index["figures"].append(bad)
        (figures / f"{bad}.svg").write_text(PLANTED_SVG, encoding="utf-8")
        for info in index["raster"].values():
            info["rows"][0] = [PAYLOADS[2], PAYLOADS[4], 1]
            info["box"] = [PAYLOADS[1], 0, 1, 1]
    (figures / "figures.json").write_text(json.dumps(index), encoding="utf-8")
    for stem in ("pareto", "signals"):  # planted, newer than the run files
        svg = (figures / f"{stem}.svg").read_text(encoding="utf-8")
        hostile = PLANTED_SVG.split("<svg", 1)[1].split(">", 1)[1].rsplit("</svg>", 1)[0]
        svg = svg.replace("<svg ", f'<svg onload="{PWN}" ', 1).replace("</svg>", hostile + "</svg>")
        (figures / f"{stem}.svg").write_text(svg, encoding="utf-8")
    later = max(p.stat().st_mtime for p in dest.iterdir() if p.is_file()) + 100
    for path in figures.iterdir():
        os.utime(path, (later, later))
    return {"spec_strings": spec_planted, "names": poison.names}


@pytest.fixture(scope="module")
def base_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("xss") / "run"
    argv = ["compare", SPEC, "--controllers", "pid,threshold", "--episodes", "6"]
    with contextlib.redirect_stdout(io.StringIO()):
        assert main([*argv, "--out", str(out), "--workers", "1"]) == 0
        assert main(["replay", str(out), "--controller", "threshold"]) == 0
    return out


def _poisoned(base: Path, root: Path, *, damaged_index: bool) -> tuple[Path, dict[str, Any]]:
    dest = root / f'run"><img src=x onerror={PWN}>'  # the directory's name is shown too
    info = _poison_run(base, dest, damaged_index=damaged_index)
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["report", str(dest)]) == 0
    return dest, info


@pytest.fixture(scope="module")
def planted(base_run: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """Every string poisoned; figures.json well formed, hostile SVGs newer than the run."""
    return _poisoned(base_run, tmp_path_factory.mktemp("planted"), damaged_index=False)


@pytest.fixture(scope="module")
def damaged(base_run: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """As ``planted``, and figures.json names a stem and raster rows the code never wrote."""
    return _poisoned(base_run, tmp_path_factory.mktemp("damaged"), damaged_index=True)


def _scripts(page: str) -> list[tuple[str, str]]:
    return re.findall(r"<script([^>]*)>(.*?)</script>", page, flags=re.S)


# --- the page's text --------------------------------------------------------------------------


def test_the_embedded_json_holds_no_raw_markup_characters(planted):
    from opar_sim.cli.page_safe import json_script as _json_script

    block = _json_script("report-data", {"s": ["</script><!--<script>", "a&b>c", "\u2028\u2029"]})
    body = block.split(">", 1)[1].rsplit("</script>", 1)[0]
    for raw in ("<", ">", "&", "\u2028", "\u2029"):
        assert raw not in body
    assert json.loads(body) == {"s": ["</script><!--<script>", "a&b>c", "\u2028\u2029"]}
    page = (planted[0] / "report.html").read_text(encoding="utf-8")
    (attrs, data), (code_attrs, _) = _scripts(page)
    assert "application/json" in attrs and "src" not in code_attrs
    assert "<" not in data and ">" not in data and "&" not in data
    assert json.loads(data)["controllers"] == list(analyze(planted[0]).controllers)


class _Elements(HTMLParser):
    """Every element of a page as a browser's tokenizer sees it: (tag, attributes)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found.append((tag, dict(attrs)))

    handle_startendtag = handle_starttag


def _elements(page: str) -> list[tuple[str, dict[str, str | None]]]:
    parser = _Elements()
    parser.feed(page)
    parser.close()
    return parser.found


def test_no_planted_markup_reaches_the_page(planted, damaged):
    allowed = {
        *("html", "head", "meta", "title", "style", "body", "header", "h1", "h2", "dl", "dt"),
        *("dd", "code", "p", "b", "nav", "span", "div", "table", "caption", "thead", "tbody"),
        *("tr", "th", "td", "ul", "li", "figure", "figcaption", "pre", "script"),
        *("svg", "g", "defs", "path", "use", "clippath", "rect", "image", "text"),
    }
    for run, info in (planted, damaged):
        assert info["spec_strings"] >= 2  # the description and the controllers' names at least
        page = (run / "report.html").read_text(encoding="utf-8")
        assert len(_scripts(page)) == 2 and page.count("<script") == 2
        elements = _elements(page)
        assert {tag for tag, _ in elements} <= allowed
        assert [a for _, a in elements if any(k.startswith("on") for k in a)] == []
        for _, attrs in elements:  # ids hold controller names: only addresses are checked
            for key, value in attrs.items():
                if key in ("href", "xlink:href", "src", "action", "formaction", "data"):
                    assert (value or "").startswith(("#", "data:image/png;base64,"))
                if key == "style":
                    assert "javascript" not in (value or "") and "url(http" not in (value or "")
        assert "evil.invalid" not in page


def test_the_page_forbids_inline_handlers_and_foreign_script(planted):
    page = (planted[0] / "report.html").read_text(encoding="utf-8")
    csp = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)">', page)
    assert csp is not None and page.index(csp.group(0)) < page.index("<script")
    policy = {d.split()[0]: d.split()[1:] for d in csp.group(1).split(";") if d.strip()}
    (_, code) = _scripts(page)[1]
    digest = base64.b64encode(hashlib.sha256(code.encode("utf-8")).digest()).decode()
    assert policy["script-src"] == [f"'sha256-{digest}'"]
    assert policy["object-src"] == ["'none'"] and policy["base-uri"] == ["'none'"]
    assert policy["default-src"] == ["'none'"]


def test_a_damaged_figure_index_or_svg_is_drawn_afresh(damaged):
    run, _ = damaged
    index = json.loads((run / "figures" / "figures.json").read_text(encoding="utf-8"))
    assert PAYLOADS[0] not in index["figures"]
    assert all(
        isinstance(v, int) for info in index["raster"].values() for r in info["rows"] for v in r
    )
    page = (run / "report.html").read_text(encoding="utf-8")
    assert (
        'data-fig="pareto"' in page and "onload" not in (run / "figures" / "pareto.svg").read_text()
    )


def test_a_truncated_svg_is_drawn_afresh_not_an_error(planted, tmp_path):
    from opar_sim.cli.report import figure_svgs

    copy = tmp_path / "copy"
    shutil.copytree(planted[0], copy)
    svg = copy / "figures" / "outcomes.svg"
    stamp = svg.stat().st_mtime
    svg.write_text(svg.read_text(encoding="utf-8")[:500], encoding="utf-8")
    os.utime(svg, (stamp, stamp))
    svgs, _, drawn = figure_svgs(analyze(copy))
    assert drawn and "outcomes" in svgs


def _parse(svg: str) -> list[tuple[str, dict[str, str]]]:
    found: list[tuple[str, dict[str, str]]] = []
    parser = xml.parsers.expat.ParserCreate(namespace_separator=" ")
    parser.StartElementHandler = lambda name, attrs: found.append((name, attrs))
    parser.Parse(svg, True)
    return found


def test_the_svg_sanitiser_keeps_drawing_and_drops_everything_active(base_run):
    from opar_sim.cli.page_safe import inline_svg

    out = inline_svg(PLANTED_SVG, "pareto")
    elements = _parse(out)
    names = {n.split()[-1] for n, _ in elements}
    # what stays draws: no script, foreignObject, a, animate, set, iframe
    assert names <= {"svg", "defs", "style", "g", "path", "rect", "text", "use", "image"}
    assert {"path", "rect", "text", "g"} <= names
    for _, attrs in elements:
        for key, value in attrs.items():
            assert not key.split()[-1].lower().startswith("on")
            assert "javascript" not in value.lower() and "evil.invalid" not in value
            if key.split()[-1] == "href":
                assert value.startswith(("#pareto-", "data:image/png;base64,"))
    assert "@import" not in out and "url(http" not in out
    assert elements[0][1]["class"] == "fig" and elements[0][1]["data-fig"] == "pareto"
    assert any(a.get("id") == "pareto-ctl--pid--pareto-x" for _, a in elements)
    # what matplotlib wrote comes through whole: every element, its ids prefixed
    real = (base_run / "figures" / "signals.svg").read_text(encoding="utf-8")
    ours = _parse(inline_svg(real, "signals"))
    theirs = [e for e in _parse(real) if "2000/svg" in e[0] and e[0].split()[-1] != "metadata"]
    assert len(ours) == len(theirs)
    assert (
        sum(
            "data:image/png;base64," in a.get("http://www.w3.org/1999/xlink href", "")
            for _, a in ours
        )
        >= 1
    )
    assert all(a["id"].startswith("signals-") for _, a in ours if "id" in a)


@pytest.mark.parametrize(
    "text",
    [
        '<!DOCTYPE svg [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;">]>'
        '<svg xmlns="http://www.w3.org/2000/svg"><text>&b;</text></svg>',
        '<!DOCTYPE svg SYSTEM "file:///etc/passwd"><svg xmlns="http://www.w3.org/2000/svg">'
        "<text>&x;</text></svg>",
        '<html xmlns="http://www.w3.org/1999/xhtml"><script>1</script></html>',
        '<svg xmlns="http://www.w3.org/2000/svg"><g>',
        "",
    ],
)
def test_the_svg_sanitiser_refuses_entities_and_what_is_not_an_svg(text):
    from opar_sim.cli.page_safe import inline_svg

    with pytest.raises(ValueError):
        inline_svg(text, "pareto")


# --- in the browser ---------------------------------------------------------------------------


def _open(sync_api: Any, run: Path, check: Any) -> dict[str, list[str]]:
    seen: dict[str, list[str]] = {"errors": [], "failed": [], "outside": [], "dialogs": []}
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=CHROMIUM if Path(CHROMIUM).is_file() else shutil.which("chromium"),
            headless=True,
            args=FLAGS,
        )
        context = browser.new_context(offline=True, viewport={"width": 900, "height": 1000})

        def route(r: Any) -> None:
            if r.request.url.startswith("file://") and r.request.url.split("#")[0].endswith(
                "report.html"
            ):
                r.continue_()
            else:  # anything but the page itself: recorded and refused
                seen["outside"].append(r.request.url)
                r.abort()

        context.route("**/*", route)
        page = context.new_page()
        page.on("console", lambda m: seen["errors"].append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: seen["errors"].append(str(e)))
        page.on("requestfailed", lambda r: seen["failed"].append(r.url))

        def dialog(d: Any) -> None:
            seen["dialogs"].append(d.message)
            d.dismiss()

        page.on("dialog", dialog)
        check(page, run / "report.html")
        browser.close()
    return seen


def _pwned(page: Any) -> Any:
    return page.evaluate("() => window.__pwned")


def _exercise(page: Any, page_file: Path) -> None:
    """Load, click every episode and control, hover every figure, follow #episode= links."""
    analysis = analyze(page_file.parent)
    episodes = len(analysis.episodes)
    page.goto(page_file.as_uri())
    page.wait_for_load_state("load")
    assert _pwned(page) is None
    # the page's own script ran: legend, episode table
    assert page.locator("nav#legend button").count() == len(analysis.controllers)
    assert page.locator("#episode-list tbody tr").count() == episodes
    texts = page.eval_on_selector_all("nav#legend button", "bs => bs.map(b => b.textContent)")
    assert texts == list(analysis.controllers)  # a name with a quote is whole in the legend
    for k in range(episodes):
        page.locator("#episode-list tbody tr").nth(k).click()
        page.wait_for_selector("#trace table tbody tr")
    assert page.locator("#trace table tbody tr").count() >= 1
    for k in range(len(analysis.controllers)):
        page.locator("nav#legend button").nth(k).click()
        page.locator("nav#legend button").nth(k).click()
    for row in page.locator(".table table tbody tr").all():
        row.hover()
    options = page.eval_on_selector_all("#outcome-filter option", "os => os.map(o => o.value)")
    for value in options:
        page.select_option("#outcome-filter", value=value)
    page.select_option("#outcome-filter", value="")
    figures = page.locator("svg.fig")
    assert figures.count() >= 5
    for k in range(figures.count()):
        fig = figures.nth(k)
        fig.scroll_into_view_if_needed()
        # the centre of every controller's artist (its tool tip), and a coarse grid around them
        points = fig.evaluate(
            """svg => [...svg.querySelectorAll('[id*="-ctl--"]')]
            .map(e => e.getBoundingClientRect()).filter(r => r.width > 0 && r.height > 0)
            .map(r => [r.x + r.width / 2, r.y + r.height / 2])"""
        )
        box = fig.bounding_box()
        assert box is not None
        grid = [
            (box["x"] + box["width"] * i / 6, box["y"] + box["height"] * j / 4)
            for i in range(1, 6)
            for j in range(1, 4)
        ]
        for x, y in [*points, *grid]:
            page.mouse.move(x, y)
        page.mouse.move(0, 0)
        assert _pwned(page) is None
    # a click on each controller's first raster row opens its trace
    raster = page.evaluate(
        "() => JSON.parse(document.getElementById('report-data').textContent).raster"
    )
    for name, info in raster.items():
        page.locator("svg[data-fig=signals]").scroll_into_view_if_needed()
        box = page.locator("svg[data-fig=signals]").bounding_box()
        assert box is not None and info["box"] is not None
        x0, y0, w, h = info["box"]
        x = box["x"] + (x0 + w / 2) * box["width"]
        y = box["y"] + (1 - (y0 + h - h / (2 * len(info["rows"])))) * box["height"]
        page.mouse.move(x, y)
        assert name in page.inner_text("#tip")
        page.mouse.click(x, y)
        assert page.inner_text("#trace-title").startswith(f"Episode trace: {name}, episode ")
    keys = page.evaluate(
        "() => JSON.parse(document.getElementById('report-data').textContent).episodes"
        ".map(e => e[0])"
    )
    # shared links: one episode of each controller, and links no report wrote
    firsts = [next(k for k in keys if k.rsplit("|", 3)[0] == c) for c in analysis.controllers]
    hostile = [f"{PAYLOADS[0]}|1|1|1", "%E0%A4%A", PAYLOADS[2], "|||"]
    for key in [*firsts, *hostile]:
        page.goto("about:blank")
        page.goto(page_file.as_uri() + "#episode=" + urllib.parse.quote(key, safe=""))
        page.wait_for_load_state("load")
        assert page.locator("#episode-list tbody tr").count() == episodes
        if key in keys:
            c, e = key.rsplit("|", 3)[:2]
            assert page.inner_text("#trace-title") == f"Episode trace: {c}, episode {e}"
            assert page.locator("#trace table tbody tr").count() >= 1
        assert _pwned(page) is None
    page.goto("about:blank")
    page.goto(page_file.as_uri() + "#episode=" + PAYLOADS[0])
    page.wait_for_load_state("load")
    assert _pwned(page) is None


@pytest.mark.parametrize("which", ["planted", "damaged"])
def test_no_planted_script_runs_in_the_browser(which, request):
    sync_api = browser_or_skip()
    run, _ = request.getfixturevalue(which)
    seen = _open(sync_api, run, _exercise)
    assert seen == {"errors": [], "failed": [], "outside": [], "dialogs": []}


# --- the attack's cases one at a time: each payload alone, in the browser ---------------------


def _plant_signal(run: Path) -> None:
    # the trace viewer wrote a step's signal into a class attribute (on opening the episode)
    def step(row: dict[str, Any]) -> dict[str, Any]:
        if row.get("signal") != "replan":  # the analysis checks replans against the counts
            row["signal"] = f'continue" onmouseover="{PWN}" x="'
        return row

    _rewrite_jsonl(run / "steps.jsonl", step)


def _plant_svg(run: Path) -> None:
    # figures/*.svg newer than the run files were reused, their script and on* copied
    for stem in ("pareto", "signals"):
        svg = (run / "figures" / f"{stem}.svg").read_text(encoding="utf-8")
        hostile = PLANTED_SVG.split("<svg", 1)[1].split(">", 1)[1].rsplit("</svg>", 1)[0]
        svg = svg.replace("<svg ", f'<svg onload="{PWN}" ', 1).replace("</svg>", hostile + "</svg>")
        (run / "figures" / f"{stem}.svg").write_text(svg, encoding="utf-8")


def _index(run: Path, change: Any) -> None:
    path = run / "figures" / "figures.json"
    index = json.loads(path.read_text(encoding="utf-8"))
    change(index)
    path.write_text(json.dumps(index), encoding="utf-8")


def _plant_figure_name(run: Path) -> None:
    # a figure name from figures.json went into the page unescaped
    _index(run, lambda index: index["figures"].append(PAYLOADS[0]))
    (run / "figures" / f"{PAYLOADS[0]}.svg").write_text(PLANTED_SVG, encoding="utf-8")


def _plant_raster_rows(run: Path) -> None:
    # raster rows from figures.json went into the page unescaped
    def change(index: dict[str, Any]) -> None:
        for info in index["raster"].values():
            info["rows"][0] = [PAYLOADS[2], PAYLOADS[4], 1]
            info["box"] = [PAYLOADS[1], 0, 1, 1]

    _index(run, change)


def _plant_comment_script(run: Path) -> None:
    # `<!--<script>` in any string (a model's search query) killed the page's own script
    def step(row: dict[str, Any]) -> dict[str, Any]:
        row["action"] = "search(q=<!--<script>)"
        row["result"] = f"<!--<script>{PWN}</script>"
        return row

    _rewrite_jsonl(run / "steps.jsonl", step)


def _plant_quoted_name(run: Path) -> None:
    # a controller name holding `"` broke the legend
    def rename(row: dict[str, Any]) -> dict[str, Any]:
        for key in ("controller", "recorded_controller"):
            if row.get(key) == "pid":
                row[key] = 'p"i"d'
        return row

    for name in ("episodes.jsonl", "steps.jsonl", *(p.name for p in run.glob("replay_*.jsonl"))):
        _rewrite_jsonl(run / name, rename)


ALONE = {
    "signal in a class attribute": (_plant_signal, False),
    "figures/*.svg newer than the run": (_plant_svg, True),
    "a figure name in figures.json": (_plant_figure_name, True),
    "raster rows in figures.json": (_plant_raster_rows, True),
    "<!--<script> in a string": (_plant_comment_script, False),
    'a controller name with "': (_plant_quoted_name, False),
}


@pytest.mark.parametrize("case", list(ALONE))
def test_each_case_of_the_attack_alone_runs_no_script(base_run, tmp_path, case):
    sync_api = browser_or_skip()
    run = tmp_path / "run"
    shutil.copytree(base_run, run)
    (run / "manifest.jsonl").unlink()  # the manifest vouches for the original bytes
    plant, figures_newer = ALONE[case]
    plant(run)
    if figures_newer:  # as a tar or zip keeps the times: the report would reuse them
        later = max(p.stat().st_mtime for p in run.iterdir() if p.is_file()) + 100
        for path in (run / "figures").iterdir():
            os.utime(path, (later, later))
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["report", str(run)]) == 0
    page = (run / "report.html").read_text(encoding="utf-8")
    assert len(_scripts(page)) == 2 and PWN not in _scripts(page)[1][1]
    assert [a for _, a in _elements(page) if any(k.startswith("on") for k in a)] == []
    seen = _open(sync_api, run, _exercise)
    assert seen == {"errors": [], "failed": [], "outside": [], "dialogs": []}
