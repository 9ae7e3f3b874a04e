"""A griffe extension for the API pages: reStructuredText *simple tables* in docstrings become Markdown tables.

Some docstrings lay out a table the reStructuredText way (columns under runs of ``=``), which reads well in the
source and in ``help()``. mkdocstrings renders docstrings as Markdown, where a line of ``=`` under text makes that
text a heading, so such a table would come out as loose lines and a stray heading. This extension rewrites each
table, in the docstring griffe hands to mkdocstrings only: the code is left as it is. ``docs/mkdocs.yml`` loads it
with mkdocstrings' ``extensions`` option.
"""
from __future__ import annotations

import re

import griffe

BORDER = re.compile(r"^(?P<indent>\s*)=+(\s+=+)+\s*$")


def column_starts(border: str) -> list[int]:
    return [m.start() for m in re.finditer(r"=+", border)]


def cells(line: str, starts: list[int]) -> list[str]:
    """The text of each column of `line`; the last column takes the rest of the line."""
    found = []
    for i, start in enumerate(starts):
        end = starts[i + 1] if i + 1 < len(starts) else None
        found.append(line[start:end].strip() if len(line) > start else "")
    return found


def markdown_row(indent: str, row: list[str]) -> str:
    return indent + "| " + " | ".join(c.replace("|", "\\|") for c in row) + " |"


def convert(text: str) -> str:
    """`text` with every simple table (two borders, or three with a header between the first two) as a Markdown
    table. A row whose first cell is empty continues the row above it."""
    lines, out, i = text.split("\n"), [], 0
    while i < len(lines):
        top = BORDER.match(lines[i])
        if not top:
            out.append(lines[i])
            i += 1
            continue
        starts, borders, body, j = column_starts(lines[i]), [i], [], i + 1
        while j < len(lines):
            if BORDER.match(lines[j]):
                borders.append(j)
                if j + 1 >= len(lines) or not lines[j + 1].strip() or len(borders) == 3:
                    break
            else:
                body.append((j, lines[j]))
            j += 1
        if len(borders) < 2:  # not a table after all
            out.append(lines[i])
            i += 1
            continue
        header = [""] * len(starts)
        if len(borders) == 3:
            header = cells(next(line for k, line in body if k < borders[1]), starts)
            body = [(k, line) for k, line in body if k > borders[1]]
        rows: list[list[str]] = []
        for _, line in body:
            row = cells(line, starts)
            if rows and not row[0]:
                rows[-1] = [f"{a} {b}".strip() for a, b in zip(rows[-1], row)]
            elif any(row):
                rows.append(row)
        indent = top.group("indent")
        out += ["", markdown_row(indent, header), indent + "|" + " --- |" * len(starts)]
        out += [markdown_row(indent, row) for row in rows] + [""]
        i = borders[-1] + 1
    return "\n".join(out)


class SimpleTables(griffe.Extension):
    """Rewrites the simple tables of every docstring griffe loads (`convert`)."""

    def on_instance(self, *, obj: griffe.Object, **kwargs) -> None:
        if obj.docstring is not None and "==" in obj.docstring.value:
            obj.docstring.value = convert(obj.docstring.value)
