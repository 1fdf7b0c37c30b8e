"""One run analysed: metrics, bootstrap intervals and facts (no I/O)."""

from __future__ import annotations

from dataclasses import dataclass

from analysis.loading.run import Design, Run, design_of

from .bootstrap import DEFAULT_REPLICATES, DEFAULT_SEED, BootstrapResult, family_bootstrap
from .facts import RunFacts, run_facts
from .metrics import Metrics, compute_metrics

__all__ = ["Analysis", "analyze_run"]


@dataclass(frozen=True, eq=False)
class Analysis:
    """Everything ``analyze`` prints for one run."""

    run: Run
    design: Design
    metrics: Metrics
    bootstrap: BootstrapResult
    facts: RunFacts


def analyze_run(run: Run, n_boot: int = DEFAULT_REPLICATES, seed: int = DEFAULT_SEED) -> Analysis:
    """Compute the paper's metrics, family-bootstrap intervals and run facts for ``run``."""
    design = design_of(run.manifest, run.outputs)
    metrics = compute_metrics(run.outputs, design)
    boot = family_bootstrap(metrics.totals, design.decoders, design.reference_decoder, n_boot, seed)
    return Analysis(run, design, metrics, boot, run_facts(run, metrics))
