"""One run analysed: metrics, bootstrap intervals and facts (no I/O)."""

from __future__ import annotations

from dataclasses import dataclass

from analysis.loading.probabilities.answers import AnswerLog, order_pair
from analysis.loading.run import Run
from runfolder import Manifest

from .banners import Banner, run_banners
from .bootstrap import DEFAULT_REPLICATES, DEFAULT_SEED, BootstrapResult, family_bootstrap
from .design import Design, design_of, design_order
from .facts import RunFacts, run_facts
from .metrics import Metrics, compute_metrics
from .paired import common_with_reference
from .probabilities import ProbabilityStats, probability_stats

__all__ = ["Analysis", "analyze_run", "probabilities_of"]


@dataclass(frozen=True, eq=False)
class Analysis:
    """Everything ``analyze`` prints for one run."""

    run: Run
    design: Design
    metrics: Metrics
    bootstrap: BootstrapResult
    facts: RunFacts
    banners: tuple[Banner, ...] = ()  # printed above the tables; --strict refuses on any
    probabilities: ProbabilityStats | None = None  # None: not computed (no AnswerLog given)


def probabilities_of(answers: AnswerLog, manifest: Manifest) -> ProbabilityStats:
    """The Probabilities section from a run's answers and manifest alone, rows in the
    tables' order (the answers' names are the outputs' own): ``load_run``'s ``digest``
    computes it before the outputs are loaded, and the answers are dropped."""
    decoders, conditions = design_order(
        manifest, answers.names["decoder"], answers.names["condition"]
    )
    return probability_stats(answers, decoders, conditions, order_pair(manifest.orders))


def analyze_run(
    run: Run,
    n_boot: int = DEFAULT_REPLICATES,
    seed: int = DEFAULT_SEED,
    answers: AnswerLog | None = None,
    probabilities: ProbabilityStats | None = None,
) -> Analysis:
    """Compute the paper's metrics, family-bootstrap intervals and run facts for ``run``,
    and the Probabilities section from ``answers`` when given (``load_answers``), or take
    it as ``probabilities`` (``probabilities_of``).

    Differences against the reference decoder are over the jobs where both are ok.
    """
    design = design_of(run.manifest, run.outputs)
    metrics = compute_metrics(run.outputs, design)
    reference = design.reference_decoder
    paired = common_with_reference(run.outputs, design, reference)
    by_domain = (metrics.domain_sums, metrics.domain_counts)
    boot = family_bootstrap(metrics.totals, paired, reference, n_boot, seed, by_domain=by_domain)
    del paired
    facts = run_facts(run, metrics)
    if answers is not None:
        probabilities = probability_stats(
            answers, design.decoders, design.conditions, order_pair(run.manifest.orders)
        )
    return Analysis(run, design, metrics, boot, facts, run_banners(run, facts), probabilities)
