"""A table as plain formatted cells: what every study's ``.table()`` and every command returns.

The command line renders it with rich (``to_rich``), the report as HTML (``to_html``); a
notebook can print ``str(table)`` or read ``rows``.  No layer below the command line needs
rich to build one.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.table import Table


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

    def to_rich(self) -> Table:
        """The table for the terminal."""
        from rich.table import Table
        from rich.text import Text

        # cells, titles and notes are plain text: a value such as "[/]" is shown, not parsed
        table = Table(
            title=Text(printable(self.title), style="table.title"),
            title_justify="left",
            caption=Text(printable("\n".join(self.notes)), style="table.caption"),
            caption_justify="left",
        )
        for k, column in enumerate(self.columns):
            if k == 0 and self.bold:
                table.add_column(Text(printable(column)), style="bold", no_wrap=True)
            elif k < self.left:
                table.add_column(Text(printable(column)))
            else:
                table.add_column(Text(printable(column)), justify="right")
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
