"""A small Markdown table type and number formatting shared by all tables."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["MAIN_FIGURE", "Table", "fmt", "fmt_interval", "fmt_range", "warning_lines"]

# The figure that belongs to a run's main table (NMAE per decoder and condition): both
# the Markdown report and the HTML page show it right after that table.
MAIN_FIGURE = "nmae"


def fmt(value: float | None, digits: int = 2) -> str:
    """A number with fixed decimals, or ``n/a`` for missing data (None or NaN)."""
    if value is None or math.isnan(value):
        return "n/a"
    text = f"{value:.{digits}f}"
    return "0.00" if text == "-0.00" and digits == 2 else text


def fmt_interval(value: float, lo: float, hi: float, digits: int = 2) -> str:
    """``12.34 [10.00, 15.00]`` as in the paper's tables; the bracket is left out when absent."""
    if math.isnan(lo) or math.isnan(hi):
        return fmt(value, digits)
    return f"{fmt(value, digits)} [{fmt(lo, digits)}, {fmt(hi, digits)}]"


def fmt_range(lo: int, hi: int) -> str:
    """``6–7`` for a range, ``2`` when both ends agree, ``n/a`` when unknown (-1)."""
    if lo < 0:
        return "n/a"
    return str(lo) if lo == hi else f"{lo}–{hi}"


def warning_lines(messages: Iterable[str]) -> list[str]:
    """A Markdown block quote with one bold ``Warning:`` line per message (none: no lines)."""
    lines = [f"> **Warning:** {message}" for message in messages]
    # Consecutive quote lines would run into one paragraph; an empty quote line parts them.
    return [part for line in lines for part in (line, ">")][:-1] + ([""] if lines else [])


@dataclass(frozen=True)
class Table:
    """A titled table; the first ``left`` columns are left-aligned, the rest right-aligned."""

    title: str
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    notes: tuple[str, ...] = ()
    left: int = 1  # how many leading columns are text (left-aligned)

    def to_markdown(self) -> str:
        """Render as a GitHub Markdown table with padded columns (readable in a terminal)."""
        widths = [max(3, len(h)) for h in self.header]
        for row in self.rows:
            widths = [max(w, len(cell)) for w, cell in zip(widths, row, strict=True)]

        def line(cells: tuple[str, ...]) -> str:
            padded = [
                cell.ljust(w) if i < self.left else cell.rjust(w)
                for i, (cell, w) in enumerate(zip(cells, widths, strict=True))
            ]
            return "| " + " | ".join(padded) + " |"

        rule = (
            "| "
            + " | ".join(
                (":" + "-" * (w - 1)) if i < self.left else ("-" * (w - 1) + ":")
                for i, w in enumerate(widths)
            )
            + " |"
        )
        parts = [f"### {self.title}", "", line(self.header), rule]
        parts += [line(row) for row in self.rows]
        if self.notes:
            parts.append("")
            parts += list(self.notes)
        return "\n".join(parts)
