"""A table as plain formatted cells: what every study's ``.table()`` and every command returns.

The command line renders it with rich (``to_rich``), the report as HTML (``to_html``); a
notebook can print ``str(table)`` or read ``rows``.  No layer below the command line needs
rich to build one.

A table wider than the terminal is fitted before rich sees it (``fit_table``): rich would
squeeze every column, wrap a header, split an interval ``[59.4, 77.2]`` over two lines or
cut it to ``[59.…``.  Text columns wrap between words (never inside an interval's
brackets); if the table is still too wide, the columns its ``priority`` ranks lowest are
left out and named in a note, and what remains is printed whole.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.table import Table
    from rich.text import Text


# C0 controls but tab and newline, DEL, and the C1 controls: what a terminal acts on
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """``text`` with every control character written as an escape (ESC as backslash-x1b).

    Strings read from a file (a trace's task id or model, a controller's name) reach the
    terminal through this: an ``ESC[2J`` in a trace is shown, it does not clear the screen.
    """
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


@dataclass(frozen=True)
class TextTable:
    """A titled table of formatted cells; the first column names the controller."""

    title: str
    columns: list[str]
    rows: list[list[str]]
    notes: list[str]
    left: int = 1  # leading columns aligned left (names, descriptions); the rest right
    bold: bool = True  # the first column in bold
    # per column, how soon it is dropped when the table is too wide: 0 never, higher first
    # (empty: every column kept)
    priority: tuple[int, ...] = ()

    def fit(self, width: int) -> TextTable:
        """The table within ``width`` terminal columns, nothing truncated and no interval split.

        Left-aligned text columns (but a bold first one) wrap between words, never inside an
        interval ``[a, b]``; when that is not enough, the columns of highest ``priority`` go
        first, named in a note (``--wide`` shows them).  Numbers are never wrapped or cut.
        """
        return fit_table(self, width)

    def __rich_console__(self, console: Any, options: Any) -> Iterator[Text | Table]:
        """Rich's protocol: ``console.print(table)`` prints it fitted to the console's width.

        The title and the notes take the console's whole width, not the table's, wrapped
        between words but never inside an interval.
        """
        from rich.text import Text

        width = options.max_width
        fitted = self.fit(width)
        yield Text(wrap(printable(self.title), width), style="table.title")
        cells = [[c, *(r[k] for r in fitted.rows)] for k, c in enumerate(fitted.columns)]
        if table_width([_natural(c) for c in cells]) <= width:
            yield fitted.to_rich(annotated=False)
            notes = fitted.notes
        else:  # too wide even wrapped and thinned: one block per row, every cell whole
            yield Text(self.records(width))
            notes = self.notes
        for note in notes:
            yield Text(wrap(printable(note), width), style="table.caption")

    def records(self, width: int) -> str:
        """The table as one block per row: its first cell, then ``column: value`` lines.

        What a terminal too narrow for the table gets: nothing is cut or dropped.
        """
        out = []
        for row in self.rows:
            out.append(printable(row[0]))
            for column, cell in zip(self.columns[1:], row[1:], strict=False):
                if cell:
                    out.append(wrap(printable(f"    {column}: {cell}"), width))
        return "\n".join(out)

    def to_rich(self, width: int | None = None, annotated: bool = True) -> Table:
        """The table for the terminal; with ``width``, fitted to it first (``fit``).

        Args:
            width: The terminal's width (None: the table as built).
            annotated: With the title above and the notes below (else printed apart).

        Returns:
            The rich table.
        """
        from rich.table import Table
        from rich.text import Text

        if width is not None:
            return self.fit(width).to_rich(annotated=annotated)

        # cells, titles and notes are plain text: a value such as "[/]" is shown, not parsed
        table = Table(
            title=Text(printable(self.title), style="table.title") if annotated else None,
            title_justify="left",
            caption=Text(printable("\n".join(self.notes)), style="table.caption")
            if annotated
            else None,
            caption_justify="left",
        )
        for k, column in enumerate(self.columns):
            if k == 0 and self.bold:
                table.add_column(Text(printable(column)), style="bold", no_wrap=True)
            elif k < self.left:
                table.add_column(Text(printable(column)), no_wrap=True)
            else:
                table.add_column(Text(printable(column)), justify="right", no_wrap=True)
        for row in self.rows:
            table.add_row(*(Text(printable(cell)) for cell in row))
        return table

    def to_html(self) -> str:
        """The table as an HTML fragment (the report)."""
        head = "".join(f"<th>{html.escape(c)}</th>" for c in self.columns)
        body = "".join(
            "<tr>" + "".join(f"<td>{html.escape(cell)}</td>" for cell in row) + "</tr>"
            for row in self.rows
        )
        notes = "".join(f"<li>{html.escape(n)}</li>" for n in self.notes)
        return (
            f"<table><caption>{html.escape(self.title)}</caption><thead><tr>{head}</tr></thead>"
            f"<tbody>{body}</tbody></table><ul class='notes'>{notes}</ul>"
        )

    def __str__(self) -> str:
        """The table as aligned plain text (a notebook, a log)."""
        cells = [self.columns, *self.rows]
        widths = [
            max(len(row[k]) for row in cells if k < len(row)) for k in range(len(self.columns))
        ]
        lines = [self.title]
        for row in cells:
            lines.append(
                "  ".join(
                    c.ljust(w) if k < self.left else c.rjust(w)
                    for k, (c, w) in enumerate(zip(row, widths, strict=False))
                )
            )
        return printable("\n".join([*lines, *self.notes]))


# rich's default box: one space of padding each side of a cell, one rule between columns
PADDING = 2
RULE = 1


def table_width(widths: list[int]) -> int:
    """Terminal columns a rich table with these column widths takes (borders included)."""
    return sum(widths) + PADDING * len(widths) + RULE * (len(widths) + 1)


def chunks(text: str) -> list[str]:
    """``text`` split at its spaces, but not at those inside square brackets (an interval)."""
    out: list[str] = []
    depth, start = 0, 0
    for k, ch in enumerate(text):
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth = max(0, depth - 1)
        elif ch == " " and depth == 0:
            if k > start:
                out.append(text[start:k])
            start = k + 1
    if start < len(text):
        out.append(text[start:])
    return out


def wrap(text: str, width: int) -> str:
    """``text`` wrapped greedily at its breakable spaces into lines of at most ``width``.

    A chunk longer than ``width`` (an interval, a long word) gets a line of its own, whole.
    """
    lines: list[str] = []
    for paragraph in text.split("\n"):
        line = " " * (len(paragraph) - len(paragraph.lstrip(" ")))  # its indent kept
        for chunk in chunks(paragraph):
            if line.strip() and len(line) + 1 + len(chunk) > width:
                lines.append(line)
                line = chunk
            else:
                line = f"{line} {chunk}" if line.strip() else line + chunk
        lines.append(line)
    return "\n".join(lines)


def _natural(cells: list[str]) -> int:
    return max((len(line) for cell in cells for line in cell.split("\n")), default=0)


def _least(cells: list[str]) -> int:
    return max((len(c) for cell in cells for c in chunks(cell.replace("\n", " "))), default=0)


def fit_table(table: TextTable, width: int) -> TextTable:
    """``table`` within ``width`` columns: headers and text wrapped, then columns dropped.

    Args:
        table: The table as built (every column, cells on one line each).
        width: The terminal's width.

    Returns:
        A table rich prints at most ``width`` wide (when its kept columns' unbreakable
        contents fit at all), with a note naming any column left out.
    """
    table = replace(  # measured as printed: escapes included
        table,
        columns=[printable(c) for c in table.columns],
        rows=[[printable(c) for c in row] for row in table.rows],
    )
    n = len(table.columns)
    priority = list(table.priority) + [0] * (n - len(table.priority))
    # text columns (but a bold first one) wrap between words; numbers and intervals never
    text = [table.left > k > (0 if table.bold else -1) for k in range(n)]
    kept = list(range(n))
    while True:
        cells = [[row[k] for row in table.rows] for k in kept]
        natural = [_natural([table.columns[k], *c]) for k, c in zip(kept, cells, strict=True)]
        least = [
            max(_least([table.columns[k]]), _least(c) if text[k] else _natural(c))
            for k, c in zip(kept, cells, strict=True)
        ]
        if table_width(least) <= width:
            break
        if not any(priority[k] for k in kept):  # the last resort: every cell wraps at spaces
            if all(text):
                break
            text = [True] * n
            continue
        kept.remove(max((k for k in kept if priority[k]), key=lambda k: (priority[k], k)))
    widths = dict(zip(kept, _shrink(natural, least, width), strict=True))

    def cell(k: int, value: str, header: bool = False) -> str:
        fits = _natural([value]) <= widths[k]
        return value if fits or not (header or text[k]) else wrap(value, widths[k])

    dropped = [table.columns[k] for k in range(n) if k not in kept]
    notes = list(table.notes)
    if dropped:
        notes.append(
            f"not shown at {width} columns: {', '.join(dropped)} (--wide shows every column)"
        )
    return replace(
        table,
        columns=[cell(k, table.columns[k], header=True) for k in kept],
        rows=[[cell(k, row[k]) for k in kept] for row in table.rows],
        notes=notes,
        left=sum(1 for k in kept if k < table.left),
        priority=tuple(priority[k] for k in kept),
    )


def _shrink(natural: list[int], least: list[int], width: int) -> list[int]:
    """Column widths: the widest column that can wrap narrowed a column at a time, to fit."""
    widths = list(natural)
    while table_width(widths) > width:
        room = [k for k in range(len(widths)) if widths[k] > least[k]]
        if not room:
            break
        widths[max(room, key=lambda j: (widths[j], j))] -= 1
    return widths
