"""Alpha spent over planned looks, so that peeking keeps the false-positive rate (no I/O).

A comparison that looks at its cells after each batch of families and stops a cell once it
is called must not test each look at the full alpha: with four looks an A/A comparison
would be called far more often than alpha. Each look k is tested at the share of alpha the
spending function releases between the previous look and this one, ``a(t_k) - a(t_k-1)``
with ``t`` the share of the families asked, the Pocock-type function of Lan & DeMets
(1983), ``a(t) = alpha ln(1 + (e - 1) t)``. The looks' levels sum to alpha, so by the union
bound the chance of any false call over all looks is at most alpha whatever the test's
dependence between looks (Holm inside each look keeps it over the cells).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

__all__ = ["spending_levels"]


def spending_levels(fractions: Sequence[float], alpha: float) -> list[float]:
    """The level of each look at the given shares of the families (increasing, the last 1)."""
    if not fractions or any(b <= a for a, b in itertools.pairwise(fractions)):
        raise ValueError("looks must be increasing shares of the families")
    if not (fractions[0] > 0 and math.isclose(fractions[-1], 1.0)):
        raise ValueError("looks must lie in (0, 1] and end at 1")
    spent = [alpha * math.log(1 + (math.e - 1) * min(t, 1.0)) for t in fractions]
    return [b - a for a, b in zip([0.0, *spent[:-1]], spent, strict=True)]
