"""Display order and labels for decoders, conditions and domains (the paper's first)."""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = [
    "condition_label",
    "decoder_label",
    "domain_label",
    "order_conditions",
    "order_decoders",
    "order_domains",
    "tree_branching",
]

_TREE = re.compile(r"tree(\d+)")
# Probability-aware decoders (harness/protocol/decoders/tree_readout.py, beam.py, bisect.py).
_PROBABILITY_AWARE = re.compile(r"tree(\d+)_(mean|median|beam(\d+))|bisect(\d+)")
# Paper order: Table "Fixed affine-grid evaluation", then the exploratory decoders.
_DECODER_RANK = {
    "direct": 0,
    "digits": 2,
    "bits": 3,
    "sets": 4,
    "adaptive_thresholds": 5,
    "parallel_thresholds": 6,
}
_DECODER_LABEL = {
    "direct": "Direct values",
    "digits": "Index digits",
    "bits": "Index bits",
    "sets": "Explicit sets",
    "adaptive_thresholds": "Adaptive thresholds",
    "parallel_thresholds": "Parallel thresholds",
    # These names exist only in the exploratory suite, so one label serves everywhere.
    "actual_digits": "Decimal digits",
    "actual_bits": "Independent bits",
    "actual_bits_plain": "Independent bits, underspecified",
    "bits_plain": "Index bits, underspecified",
    "bits4": "Independent bits",  # actual_bits before its rename, in older run folders
    "threshold_cdf": "Threshold CDF",
}
# Suites whose paper table has its own rows: (decoder, label) in the table's row order.
# The same decoder name can be a different protocol there (the exploratory `direct` picks
# one of 16 values; `tree4` is labelled by what it asks, "four-way intervals"), so labels
# and order are looked up per suite before the global ones.
_SUITE_DECODERS: dict[str, tuple[tuple[str, str], ...]] = {
    "exploratory": (
        ("direct", "Direct 16-value"),
        ("tree4", "Four-way intervals"),
        ("sets", "Explicit sets"),
        ("actual_digits", "Decimal digits"),
        ("adaptive_thresholds", "Adaptive thresholds"),
        ("parallel_thresholds", "Parallel thresholds"),
        ("actual_bits", "Independent bits"),
        ("bits4", "Independent bits"),  # actual_bits before its rename, in older run folders
        ("threshold_cdf", "Threshold CDF"),
    ),
}
_CONDITIONS = ("arithmetic", "recall", "provided")
_DOMAINS = ("int", "fraction", "x0.01", "minus50", "x10000")
_DOMAIN_LABEL = {
    "int": "Integer",
    "fraction": "Fraction",
    "x0.01": "×0.01",
    "minus50": "−50",
    "x10000": "×10⁴",
}


def tree_branching(decoder: str) -> int | None:
    """Return K for an interval-tree decoder name ``treeK`` (K >= 2), else None."""
    match = _TREE.fullmatch(decoder)
    if match is None or int(match.group(1)) < 2:
        return None
    return int(match.group(1))


def _unique(names: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(names))


def order_decoders(names: Iterable[str], suite: str | None = None) -> tuple[str, ...]:
    """Known decoders in the paper's order (trees by K), then any others as first seen.

    A suite with its own paper table (``exploratory``) uses that table's row order.
    """
    if suite in _SUITE_DECODERS:
        return _known_first(names, tuple(name for name, _ in _SUITE_DECODERS[suite]))

    def key(name: str) -> tuple[int, int]:
        k = tree_branching(name)
        if k is not None:
            return (1, k)
        return (_DECODER_RANK.get(name, 7), 0)

    return tuple(sorted(_unique(names), key=key))  # sorted() is stable for unknown names


def _known_first(names: Iterable[str], known: tuple[str, ...]) -> tuple[str, ...]:
    unique = _unique(names)
    return tuple([n for n in known if n in unique] + [n for n in unique if n not in known])


def order_conditions(names: Iterable[str]) -> tuple[str, ...]:
    """Arithmetic, recall, provided, then any other condition as first seen."""
    return _known_first(names, _CONDITIONS)


def order_domains(names: Iterable[str]) -> tuple[str, ...]:
    """Integer, fraction, the affine domains in the paper's order, then others as first seen."""
    return _known_first(names, _DOMAINS)


def decoder_label(name: str, suite: str | None = None) -> str:
    """Row label used in tables and figures, e.g. ``tree10`` -> ``Tree (K=10)``.

    With ``suite``, that suite's paper labels come first (exploratory ``direct`` ->
    ``Direct 16-value``); without it, or for other suites, the affine labels apply.
    """
    if suite in _SUITE_DECODERS:
        label = dict(_SUITE_DECODERS[suite]).get(name)
        if label is not None:
            return label
    k = tree_branching(name)
    if k is not None:
        return f"Tree (K={k})"
    match = _PROBABILITY_AWARE.fullmatch(name)
    if match is not None:
        tree, variant, beam, bisect = match.groups()
        if bisect is not None:
            return f"Bisection (K={bisect})"
        return f"Tree (K={tree}), " + (f"beam {beam}" if beam else variant)
    return _DECODER_LABEL.get(name, name)


def condition_label(name: str) -> str:
    """Column label for an input condition (``arithmetic`` -> ``Arithmetic``)."""
    return name[:1].upper() + name[1:]


def domain_label(name: str) -> str:
    """Column label for a domain (``x10000`` -> ``×10⁴``, ``fraction`` -> ``Fraction``)."""
    return _DOMAIN_LABEL.get(name, name)
