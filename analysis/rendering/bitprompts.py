"""The bit-prompt control and the crossed prompt control (suite ``bitprompts``).

Paper, Appendix "Exploratory Records": "An earlier bit-prompt control contrasts
underspecified bit queries with explicit bit weights and arithmetic rules. Across the two
option orders, its MAPE decreases from 40.95-46.51% to 20.15-24.31%." The run's MAPE per
decoder and option order, the paper's figures beside them (labelled paper, never a result of
the run), and the 2x2 of what the bits write (x or the grid index q) against the wording.
Importing this module registers the tables for the ``bitprompts`` suite.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from analysis.statistics.summary import Analysis

from .json_numbers import number, register_numbers
from .markdown import Table, fmt
from .tables import main_table, register_tables, table_suffix, within5_table

__all__ = ["PAPER", "bitprompt_numbers", "bitprompt_tables", "mape_by_order"]

SUITE = "bitprompts"
# The paper's bit-prompt control, MAPE % in its two option orders (the range it gives).
PAPER = {"underspecified": (40.95, 46.51), "explicit": (20.15, 24.31)}
# (what the bits write, wording) -> decoder
CROSSED = {
    ("x", "explicit"): "actual_bits",
    ("x", "underspecified"): "actual_bits_plain",
    ("q", "explicit"): "bits",
    ("q", "underspecified"): "bits_plain",
}


def mape_by_order(a: Analysis) -> dict[str, dict[str, float]]:
    """MAPE (%) of each decoder per option order and overall, over its ok outputs."""
    out = a.run.outputs
    found: dict[str, dict[str, float]] = {}
    for d, decoder in enumerate(out.decoder_names):
        mine = out.ok & (out.decoder == d) & np.isfinite(out.ape)
        row = {"overall": float(out.ape[mine].mean()) if mine.any() else float("nan")}
        for o, order in enumerate(out.order_names):
            here = mine & (out.order == o)
            row[order] = float(out.ape[here].mean()) if here.any() else float("nan")
        found[decoder] = row
    return found


def bitprompt_tables(a: Analysis) -> list[Table]:
    """The control by option order beside the paper's, and the crossed 2x2."""
    by = mape_by_order(a)
    orders = list(a.run.outputs.order_names)
    suffix = table_suffix(a)
    rows = []
    for (what, wording), decoder in CROSSED.items():
        if decoder not in by:
            continue
        bits = "bits of x" if what == "x" else "bits of the index q"
        cells = [fmt(by[decoder].get(order, float("nan"))) for order in orders]
        rows.append((f"{bits}, {wording}", *cells, fmt(by[decoder]["overall"])))
    for wording, (lo, hi) in PAPER.items():
        rows.append((f"paper: {wording} bit queries", *(["–"] * len(orders)), f"{lo}–{hi}"))
    header = ("Decoder (prompt)", *(f"MAPE {o}" for o in orders), "MAPE")
    notes = (
        "Underspecified: 'Write x as four binary digits, most significant first. Select digit "
        "i of them' (no weights, no rule); explicit: the weights and 'floor(x / w) modulo 2'. "
        "The paper's rows are its published range over its two option orders, not this run.",
    )
    control = Table(
        f"Bit-prompt control: MAPE (%) by option order{suffix}", header, tuple(rows), notes
    )
    grid = []
    for what, label in (("x", "bits of x (actual value)"), ("q", "bits of the grid index q")):
        cells = [
            fmt(by[CROSSED[(what, w)]]["overall"]) if CROSSED[(what, w)] in by else "–"
            for w in ("explicit", "underspecified")
        ]
        grid.append((label, *cells))
    crossed = Table(
        f"Crossed prompt control: MAPE (%){suffix}",
        ("What the bits write", "explicit", "underspecified"),
        tuple(grid),
        ("Both option orders and repeats pooled; each cell one decoder of this run.",),
    )
    return [control, crossed]


def bitprompt_numbers(a: Analysis) -> dict[str, Any]:
    """The numbers of :func:`bitprompt_tables` for ``analyze --json``."""
    by = mape_by_order(a)
    return {
        "mape_by_order": {d: {k: number(v) for k, v in row.items()} for d, row in by.items()},
        "paper_bit_prompt_control": {k: list(v) for k, v in PAPER.items()},
    }


register_tables(SUITE, bitprompt_tables, main_table, within5_table)
register_numbers(SUITE, bit_prompt_control=bitprompt_numbers)
