"""Imported predictions that do not depend on the option order (no I/O).

A continuous head (the paper's spline and Beta heads) predicts one value per case: it is
shown no options, so there is nothing to permute, and its ordering gap is not 0 but
undefined (the paper: n/a). ``import-predictions`` copies a prediction given without an
order to every order of its case; such a decoder's values agree across orders everywhere.
"""

from __future__ import annotations

import numpy as np

from .outputs import Outputs

__all__ = ["order_free_decoders"]


def order_free_decoders(outputs: Outputs) -> frozenset[str]:
    """Imported decoders whose ok values are the same in every option order of every
    case, condition and repeat (with two or more orders; else none)."""
    if len(outputs.order_names) < 2:
        return frozenset()
    free = set()
    values = outputs.value  # gathered once: built from codes on each access
    for name in outputs.imported:
        d = outputs.decoder_names.index(name)
        rows = np.flatnonzero((outputs.decoder == d) & outputs.ok)
        seen: dict[tuple[int, int, int], float] = {}
        agree = True
        for i in rows.tolist():
            key = (int(outputs.case[i]), int(outputs.condition[i]), int(outputs.repeat[i]))
            value = float(values[i])
            if seen.setdefault(key, value) != value:
                agree = False
                break
        if agree and len(rows):
            free.add(name)
    return frozenset(free)
