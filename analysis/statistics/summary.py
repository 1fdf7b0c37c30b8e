"""One run analysed: metrics, bootstrap intervals and facts (no I/O)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from analysis.loading.answers import AnswerLog, order_pair
from analysis.loading.run import Design, Run, design_of

from .banners import Banner, run_banners
from .bootstrap import DEFAULT_REPLICATES, DEFAULT_SEED, BootstrapResult, family_bootstrap
from .facts import RunFacts, run_facts
from .metrics import Metrics, compute_metrics
from .paired import common_with_reference
from .probabilities import ProbabilityStats, probability_stats

__all__ = ["Analysis", "analyze_run", "take_probabilities"]


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


def take_probabilities(run: Run) -> tuple[Run, ProbabilityStats | None]:
    """The Probabilities section of ``run`` (None without ``run.answers``), and the run
    without its answers: a caller that keeps only these two frees the joined answers (the
    largest of a 100× run's columns) before the metrics make their temporaries."""
    if run.answers is None:
        return run, None
    design = design_of(run.manifest, run.outputs)
    stats = probability_stats(
        run.answers, design.decoders, design.conditions, order_pair(run.manifest.orders)
    )
    return replace(run, answers=None), stats


def analyze_run(
    run: Run,
    n_boot: int = DEFAULT_REPLICATES,
    seed: int = DEFAULT_SEED,
    answers: AnswerLog | None = None,
    probabilities: ProbabilityStats | None = None,
) -> Analysis:
    """Compute the paper's metrics, family-bootstrap intervals and run facts for ``run``,
    and the Probabilities section from ``answers`` when given (``load_answers``), or take
    it as ``probabilities`` (``take_probabilities``).

    Differences against the reference decoder are over the jobs where both are ok.
    """
    design = design_of(run.manifest, run.outputs)
    metrics = compute_metrics(run.outputs, design)
    reference = design.reference_decoder
    paired = common_with_reference(run.outputs, design, reference)
    boot = family_bootstrap(metrics.totals, paired, reference, n_boot, seed)
    del paired
    facts = run_facts(run, metrics)
    if answers is not None:
        probabilities = probability_stats(
            answers, design.decoders, design.conditions, order_pair(run.manifest.orders)
        )
    return Analysis(run, design, metrics, boot, facts, run_banners(run, facts), probabilities)
