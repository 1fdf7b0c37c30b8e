"""The design of a run's tables: their rows and columns in display order, from the
manifest's declared design and what the outputs hold (no I/O)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from analysis.loading.logs.order_free import order_free_decoders
from analysis.loading.logs.outputs import Outputs
from analysis.loading.names import order_conditions, order_decoders, order_domains
from runfolder import Manifest

__all__ = [
    "REFERENCE_DECODER",
    "REFERENCE_DOMAIN",
    "Design",
    "design_of",
    "design_order",
]

# Paired differences are taken against direct choice (paper, Section 4).
REFERENCE_DECODER = "direct"
# Affine gaps compare each transform with the untransformed integer domain.
REFERENCE_DOMAIN = "int"


@dataclass(frozen=True)
class Design:
    """The rows and columns of a run's tables, in display order.

    ``expected_per_cell`` is how many outputs each manifest decoder × manifest condition
    should have (n_jobs split evenly over conditions), or None when it cannot be known.
    """

    decoders: tuple[str, ...]
    conditions: tuple[str, ...]
    orders: tuple[str, ...]
    domains: tuple[str, ...]
    reference_decoder: str | None
    reference_domain: str | None
    expected_decoders: frozenset[str]
    expected_conditions: frozenset[str]
    expected_per_cell: int | None
    # Imported decoders given one value per case in every run (no option order was shown):
    # their ordering gap is undefined (the paper's n/a), not 0, so it is never computed.
    order_free: frozenset[str] = frozenset()

    def expected(self, decoder: str, condition: str) -> int | None:
        """Outputs the manifest promises for this decoder × condition (None if unknown)."""
        if decoder in self.expected_decoders and condition in self.expected_conditions:
            return self.expected_per_cell
        return None


def design_order(
    manifest: Manifest, decoder_names: Iterable[str], condition_names: Iterable[str]
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The tables' decoders and conditions: the manifest's, then the named ones, in order."""
    decoders = order_decoders(list(manifest.decoders) + list(decoder_names), manifest.suite)
    return decoders, order_conditions(list(manifest.conditions) + list(condition_names))


def design_of(manifest: Manifest, outputs: Outputs, *others: Outputs) -> Design:
    """Combine the manifest's declared design with what the outputs contain (and ``others``':
    the other runs of a diff or a comparison)."""
    present = [outputs, *others]
    decoders, conditions = design_order(
        manifest,
        [n for o in present for n in o.decoder_names],
        [n for o in present for n in o.condition_names],
    )
    orders = tuple(
        dict.fromkeys(list(manifest.orders) + [n for o in present for n in o.order_names])
    )
    domains = order_domains(n for o in present for n in o.domain_names)
    expected = None
    n_conditions = len(manifest.conditions)
    if manifest.n_jobs is not None and n_conditions and manifest.n_jobs % n_conditions == 0:
        expected = manifest.n_jobs // n_conditions
    return Design(
        decoders=decoders,
        conditions=conditions,
        orders=orders,
        domains=domains,
        reference_decoder=REFERENCE_DECODER if REFERENCE_DECODER in decoders else None,
        reference_domain=REFERENCE_DOMAIN if REFERENCE_DOMAIN in domains else None,
        expected_decoders=frozenset(manifest.decoders),
        expected_conditions=frozenset(manifest.conditions),
        expected_per_cell=expected,
        order_free=_order_free(present),
    )


def _order_free(present: list[Outputs]) -> frozenset[str]:
    """Imported decoders order-free in every one of ``present`` that holds them."""
    imported = frozenset(n for o in present for n in o.imported)
    free = [order_free_decoders(o) | (imported - o.imported) for o in present]
    return imported.intersection(*free)
