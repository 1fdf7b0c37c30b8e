"""The continuous-head transfer table (paper, Appendix "Continuous-Head Transfer Protocol").

External numerical predictions, imported into a run with ``numericjev import-predictions``
(the paper's spline and Beta heads predict a mean that is mapped back from [0, 1]), laid out
as the paper's transfer table: per imported predictor, the share within 5% APE, MAPE and NMAE
on the arithmetic condition, and within 5% and MAPE with the value provided. The paper's
four heads are printed beside them, labelled paper: they are its published figures, not
this run's.
"""

from __future__ import annotations

import math

from analysis.statistics.facts import SIMULATED_NOTICE
from analysis.statistics.metrics import STATISTICS
from analysis.statistics.summary import Analysis

from .markdown import Table, fmt, fmt_interval
from .tables import register_extra, title_suffix

__all__ = ["PAPER_HEADS", "transfer_table"]

# Table "SCM-trained continuous heads transferred to the same arithmetic suite": within 5%,
# MAPE, NMAE (arithmetic); within 5%, MAPE (provided).
PAPER_HEADS = (
    ("4B Spline", 3.91, 117.78, 23.99, 3.91, 122.66),
    ("4B Beta", 2.73, 134.67, 24.73, 1.17, 119.25),
    ("9B Spline", 3.52, 138.52, 24.59, 5.08, 128.19),
    ("9B Beta", 6.25, 153.88, 26.30, 5.47, 148.56),
)


def transfer_table(a: Analysis) -> list[Table]:
    """The transfer table when the run holds imported predictions (else nothing)."""
    imported = [d for d in a.design.decoders if d in a.run.outputs.imported]
    if not imported:
        return []
    m, b = a.metrics, a.bootstrap
    conditions = a.design.conditions

    def get(statistic: str, decoder: str, condition: str) -> str:
        if condition not in conditions:
            return "–"
        value = m.get(statistic, decoder, condition)
        if math.isnan(value):
            return "–"
        s, d = STATISTICS.index(statistic), a.design.decoders.index(decoder)
        c = conditions.index(condition)
        return fmt_interval(value, float(b.lo[s, d, c]), float(b.hi[s, d, c]))

    rows: list[tuple[str, ...]] = [
        (
            f"{decoder} (imported)",
            get("within5", decoder, "arithmetic"),
            get("mape", decoder, "arithmetic"),
            get("nmae", decoder, "arithmetic"),
            get("within5", decoder, "provided"),
            get("mape", decoder, "provided"),
        )
        for decoder in imported
    ]
    rows += [(f"paper: {name}", *(fmt(v) for v in values)) for name, *values in PAPER_HEADS]
    header = (
        "Predictor",
        "Within 5% Arithmetic",
        "MAPE Arithmetic",
        "NMAE Arithmetic",
        "Within 5% Provided",
        "MAPE Provided",
    )
    notes: tuple[str, ...] = (
        "All in %; within 5%: share of outputs with APE ≤ 5 (higher is better). Imported rows: "
        "this run's predictions added with `numericjev import-predictions`, over their ok "
        "outputs. Paper rows: its four SCM-trained LoRA heads (4B/9B backbones, spline and "
        "Beta), as published; different backbones and training, so no isolated head ablation. "
        "Imported rows: 95% family-bootstrap intervals, the main table's (none with fewer "
        "than 5 families). Paper rows: no interval, as the paper published none.",
    )
    # The rows are the imported heads' and the paper's, not the run's model's: the title
    # says SIMULATED only when an imported head is the sim's (import-predictions --simulated).
    sim_heads = [d for d in imported if d in a.run.outputs.simulated_imports]
    notice = SIMULATED_NOTICE if sim_heads else None
    title = "Continuous-head transfer" + title_suffix(a.facts.model, a.facts.suite, notice)
    if a.facts.simulated and not sim_heads:
        notes += (
            "The run's own model is simulated; the imported heads are not the sim's (they "
            "came from a file), so this table is not marked SIMULATED.",
        )
    return [Table(title, header, tuple(rows), notes)]


register_extra(transfer_table)
