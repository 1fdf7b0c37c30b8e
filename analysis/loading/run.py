"""A run folder loaded whole, and the design (rows and columns) its tables use."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from runfolder import RunFolderError, SessionRecord, is_comparison, read_sessions, scan_logs

from .exchanges import RequestLog, load_requests
from .manifest import Manifest, load_manifest
from .names import order_conditions, order_decoders, order_domains
from .outputs import Outputs, load_outputs
from .provenance import HashCheck, recheck

__all__ = ["REFERENCE_DECODER", "REFERENCE_DOMAIN", "Design", "Run", "design_of", "load_run"]

# Paired differences are taken against direct choice (paper, Section 4).
REFERENCE_DECODER = "direct"
# Affine gaps compare each transform with the untransformed integer domain.
REFERENCE_DOMAIN = "int"


@dataclass(frozen=True, eq=False)
class Run:
    """A run folder: its manifest, outputs, request log and sessions (none in older runs)."""

    manifest: Manifest
    outputs: Outputs
    requests: RequestLog
    sessions: tuple[SessionRecord, ...] = ()
    hashes: HashCheck | None = None  # the manifest's hashes recomputed (None: not checked)


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

    def expected(self, decoder: str, condition: str) -> int | None:
        """Outputs the manifest promises for this decoder × condition (None if unknown)."""
        if decoder in self.expected_decoders and condition in self.expected_conditions:
            return self.expected_per_cell
        return None


def design_of(manifest: Manifest, outputs: Outputs, *others: Outputs) -> Design:
    """Combine the manifest's declared design with what the outputs contain (and ``others``':
    the other runs of a diff or a comparison)."""
    present = [outputs, *others]
    decoders = order_decoders(
        list(manifest.decoders) + [n for o in present for n in o.decoder_names], manifest.suite
    )
    conditions = order_conditions(
        list(manifest.conditions) + [n for o in present for n in o.condition_names]
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
    )


def load_run(path: Path | str) -> Run:
    """Load manifest.json, outputs.jsonl, requests.jsonl and sessions.jsonl of one run folder."""
    run_dir = Path(path)
    if is_comparison(run_dir):
        raise RunFolderError(
            f"{run_dir} is a comparison folder (numericjev compare), not one run: "
            f"`numericjev analyze {run_dir}` summarises it; to look at one of its runs, pass "
            f"its folder, e.g. {run_dir}/<suite>-m1-<model>"
        )
    manifest = load_manifest(run_dir)
    # The logs' record numbers, checked across both files: a log cut in the middle is refused
    # here as by resume (each reader below already counts a repeated record once).
    scan_logs(run_dir)
    return Run(
        manifest=manifest,
        outputs=load_outputs(run_dir / "outputs.jsonl"),
        requests=load_requests(run_dir / "requests.jsonl"),
        sessions=tuple(read_sessions(run_dir)),  # absent before sessions.jsonl: ()
        hashes=recheck(run_dir, manifest),
    )
