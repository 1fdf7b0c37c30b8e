"""The bit-prompt control and this project's crossed prompt table (suite ``bitprompts``).

Paper, Appendix "Exploratory Records": "An earlier bit-prompt control contrasts
underspecified bit queries with explicit bit weights and arithmetic rules. Across the two
option orders, its MAPE decreases from 40.95-46.51% to 20.15-24.31%." The run's MAPE per
decoder with its family interval; the paired difference between the two wordings of the
same questions with compare's interval and p (``analysis.statistics.paired_test``); the
paper's figures beside them, labelled paper, never a result of the run. Crossing the
wording with what the bits write (x or the grid index q) is this project's design: the
paper names a "crossed prompt control" among its archived protocols, describes none and
reports no figure for it. Importing this module registers the tables for ``bitprompts``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from analysis.statistics.bootstrap import percentile_interval, ratio_replicates, resample_weights
from analysis.statistics.metrics import STATISTICS
from analysis.statistics.paired import common_with_reference
from analysis.statistics.paired_test import paired_difference
from analysis.statistics.summary import Analysis

from .json_numbers import number, register_numbers
from .markdown import Table, fmt, fmt_interval
from .tables import main_table, register_tables, table_suffix, within5_table

__all__ = ["PAPER", "WordingDifference", "bitprompt_numbers", "bitprompt_tables", "mape_by_order",
           "order_intervals", "wording_differences"]  # fmt: skip

SUITE = "bitprompts"
# The paper's bit-prompt control, MAPE % in its two option orders (the range it gives).
PAPER = {"underspecified": (40.95, 46.51), "explicit": (20.15, 24.31)}
# The decrease its two ranges allow, whichever orders pair (no interval is published).
PAPER_DECREASE = (
    round(PAPER["underspecified"][0] - PAPER["explicit"][1], 2),
    round(PAPER["underspecified"][1] - PAPER["explicit"][0], 2),
)
# (what the bits write, wording) -> decoder
CROSSED = {
    ("x", "explicit"): "actual_bits",
    ("x", "underspecified"): "actual_bits_plain",
    ("q", "explicit"): "bits",
    ("q", "underspecified"): "bits_plain",
}
WRITES = {"x": "bits of x", "q": "bits of the index q"}
_MAPE = STATISTICS.index("mape")


@dataclass(frozen=True)
class WordingDifference:
    """Underspecified minus explicit MAPE (pp) over the jobs both answered ok."""

    writes: str  # "x" or "q"
    delta: float
    lo: float
    hi: float
    p: float
    units: int
    families: int


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


def order_intervals(a: Analysis) -> dict[str, dict[str, tuple[float, float]]]:
    """Each decoder's MAPE per option order with its family-bootstrap interval: the main
    table's resamples (replicates, seed, level) of the same families, every order of a
    family drawn together; NaN where the run has too few families for an interval."""
    out, b = a.run.outputs, a.bootstrap
    n_f, n_o = len(out.family_names), len(out.order_names)
    width = len(out.decoder_names) * n_o
    lo = hi = np.full(width, np.nan)
    if b.n_boot > 0 and b.refusal is None and n_f:
        keep = out.ok & np.isfinite(out.ape)
        column = out.decoder[keep].astype(np.int64) * n_o + out.order[keep]
        family = out.family[keep].astype(np.int64)
        sums, counts = np.zeros((n_f, width)), np.zeros((n_f, width))
        np.add.at(sums, (family, column), out.ape[keep])
        np.add.at(counts, (family, column), 1.0)
        weights = resample_weights(n_f, b.n_boot, b.seed)
        lo, hi = percentile_interval(ratio_replicates(sums, counts, weights), b.level)
    return {
        decoder: {
            order: (float(lo[d * n_o + o]), float(hi[d * n_o + o]))
            for o, order in enumerate(out.order_names)
        }
        for d, decoder in enumerate(out.decoder_names)
    }


def _condition(a: Analysis) -> int:
    """The condition the tables read (the suite asks only ``arithmetic``)."""
    names = a.design.conditions
    return names.index("arithmetic") if "arithmetic" in names else 0


def wording_differences(a: Analysis) -> list[WordingDifference]:
    """For bits of x and of q: underspecified minus explicit MAPE, paired over the jobs
    both wordings answered ok, with compare's test: its interval and p-value."""
    c, b = _condition(a), a.bootstrap
    out = []
    for writes in ("x", "q"):
        explicit, plain = CROSSED[(writes, "explicit")], CROSSED[(writes, "underspecified")]
        if explicit not in a.design.decoders or plain not in a.design.decoders:
            continue
        paired = common_with_reference(a.run.outputs, a.design, explicit)
        assert paired is not None
        test = paired_difference(paired, b.n_boot, b.seed, b.level)
        d = a.design.decoders.index(plain)
        out.append(
            WordingDifference(
                writes,
                float(test.delta[_MAPE, d, c]),
                float(test.lo[_MAPE, d, c]),
                float(test.hi[_MAPE, d, c]),
                float(test.p[_MAPE, d, c]),
                int(test.units[_MAPE, d, c]),
                test.n_families,
            )
        )
    return out


def _mape_cell(a: Analysis, decoder: str) -> str:
    """A decoder's MAPE with its family-bootstrap interval (bracket absent without one)."""
    d, c, b = a.design.decoders.index(decoder), _condition(a), a.bootstrap
    return fmt_interval(
        float(a.metrics.point[_MAPE, d, c]), float(b.lo[_MAPE, d, c]), float(b.hi[_MAPE, d, c])
    )


def bitprompt_tables(a: Analysis) -> list[Table]:
    """The control's MAPE and paired wording difference beside the paper's, and the crossed
    table (this project's design)."""
    by, spans = mape_by_order(a), order_intervals(a)
    orders = list(a.run.outputs.order_names)
    suffix = table_suffix(a)
    rows = []
    for (what, wording), decoder in CROSSED.items():
        if decoder not in by or decoder not in a.design.decoders:
            continue
        cells = [
            fmt_interval(by[decoder].get(order, float("nan")), *spans[decoder][order])
            for order in orders
        ]
        rows.append((f"{WRITES[what]}, {wording}", *cells, _mape_cell(a, decoder)))
    for wording, (lo, hi) in PAPER.items():
        rows.append((f"paper: {wording} bit queries", *(["–"] * len(orders)), f"{lo}–{hi}"))
    header = ("Decoder (prompt)", *(f"MAPE {o}" for o in orders), "MAPE [95% interval]")
    notes = (
        "Underspecified: 'Write x as four binary digits, most significant first. Select digit "
        "i of them' (no weights, no rule); explicit: the weights and 'floor(x / w) modulo 2'. "
        "Intervals: 95% family bootstrap over the suite's expressions, per option order too "
        "(the same resamples). The paper's rows are its published range over its two option "
        "orders (it published no interval), not this run.",
    )
    control = Table(
        f"Bit-prompt control: MAPE (%) by option order{suffix}", header, tuple(rows), notes
    )
    diffs = []
    for w in wording_differences(a):
        diffs.append((
            f"{WRITES[w.writes]}: underspecified − explicit",
            fmt_interval(w.delta, w.lo, w.hi), fmt(w.p, 4), f"{w.units}", f"{w.families}",
        ))  # fmt: skip
    lo, hi = PAPER_DECREASE
    diffs.append(("paper: underspecified − explicit", f"{lo}–{hi}", "–", "–", "–"))
    paired = Table(
        f"Bit-prompt control: underspecified minus explicit, paired{suffix}",
        ("Bits (difference of MAPE, pp)", "Δ [95% interval]", "p", "common outputs", "families"),
        tuple(diffs),
        (
            "Each difference is over the jobs both wordings answered ok (the same expressions, "
            "orders and repeats), with compare's paired test (a cluster-robust t over the "
            "families; the interval inverts it), uncorrected. One run's difference is one "
            "draw; read it by its interval. The paper's row is the decrease its two published "
            "ranges allow, whichever orders pair; it published no interval.",
        ),
    )
    grid = []
    for what in ("x", "q"):
        cells = [
            _mape_cell(a, CROSSED[(what, w)]) if CROSSED[(what, w)] in a.design.decoders else "–"
            for w in ("explicit", "underspecified")
        ]
        grid.append((WRITES[what], *cells))
    crossed = Table(
        f"Crossed prompt table (this project's design, not the paper's): MAPE (%){suffix}",
        ("What the bits write", "explicit", "underspecified"),
        tuple(grid),
        (
            "The paper lists a 'crossed prompt control' among its archived protocols but "
            "describes none and publishes no figure for it; crossing the two wordings with "
            "what the bits write is this harness's design, and no paper figure belongs beside "
            "it. Both option orders and repeats pooled; 95% family intervals.",
        ),
    )
    return [control, paired, crossed]


def bitprompt_numbers(a: Analysis) -> dict[str, Any]:
    """The numbers of :func:`bitprompt_tables` for ``analyze --json``."""
    by, spans = mape_by_order(a), order_intervals(a)
    return {
        "mape_by_order": {d: {k: number(v) for k, v in row.items()} for d, row in by.items()},
        "mape_by_order_interval": {
            d: {k: [number(lo), number(hi)] for k, (lo, hi) in row.items()}
            for d, row in spans.items()
        },
        "wording_differences": [
            {
                "bits_of": w.writes,
                "underspecified_minus_explicit": number(w.delta),
                "lo": number(w.lo),
                "hi": number(w.hi),
                "p": number(w.p),
                "common_outputs": w.units,
                "families": w.families,
            }
            for w in wording_differences(a)
        ],
        "paper_bit_prompt_control": {k: list(v) for k, v in PAPER.items()},
        "paper_decrease_range": list(PAPER_DECREASE),
    }


register_tables(SUITE, bitprompt_tables, main_table, within5_table)
register_numbers(SUITE, bit_prompt_control=bitprompt_numbers)
