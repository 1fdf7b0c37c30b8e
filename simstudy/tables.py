"""Profiles side by side as Markdown tables (a fitted sim beside its run, the sim beside
the paper). Every column made by the sim says SIMULATED."""

from __future__ import annotations

from collections.abc import Sequence

from simstudy.profile import Profile

_LABELS = {"mape": "MAPE", "nmae": "NMAE", "ordering_gap": "Order gap", "affine_gap": "Affine gap"}


def side_by_side(
    profiles: Sequence[tuple[str, Profile]], keys: Sequence[str] | None = None
) -> list[str]:
    """One row per figure (``keys``, else every figure of the first profile), one column
    per named profile; a figure a profile lacks shows as a dash."""
    names = [name for name, _ in profiles]
    rows = list(keys) if keys is not None else list(profiles[0][1])
    head = ["Figure (%)", *names]
    body = [[_figure_label(key), *(_cell(p.get(key)) for _, p in profiles)] for key in rows]
    widths = [max(len(r[i]) for r in [head, *body]) for i in range(len(head))]
    lines = [
        "| " + " | ".join(h.ljust(w) for h, w in zip(head, widths, strict=True)) + " |",
        "| "
        + " | ".join(("-" * w if i == 0 else "-" * (w - 1) + ":") for i, w in enumerate(widths))
        + " |",
    ]
    for r in body:
        cells = [
            r[0].ljust(widths[0]),
            *(c.rjust(w) for c, w in zip(r[1:], widths[1:], strict=True)),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _figure_label(key: str) -> str:
    """``mape/tree10/arithmetic/x10000`` -> ``MAPE tree10 arithmetic x10000``."""
    statistic, *rest = key.split("/")
    return " ".join([_LABELS.get(statistic, statistic), *rest])


def _cell(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"
