"""A comparison summarised: each model's metric, each later model's paired difference against
the first, and a verdict per cell corrected for the number of cells compared (no I/O).

Per suite, for each decoder × condition:

- each model's metric over its own ok outputs, with its family-bootstrap interval;
- for each later model, the difference ``model − baseline`` over the (job, decoder) outputs
  ok in both runs (``paired.common_outputs``, as ``diff``), judged by the verdict test
  (``family_test.paired_family_test``: a cluster-robust t over families, chosen by a
  calibration study), with the interval that inverts it (it excludes 0 exactly when the
  unadjusted p is below alpha);
- its p-value Holm-adjusted over every cell of the comparison that has one (``multiple.py``
  says why Holm), the verdict it gives at ``alpha`` (decided here, once, and kept), and for
  each "no clear difference" the minimum detectable effect at 80% power at Holm's first
  step (alpha / m);
- with a ``margin`` (``compare --fail-on-worse``), the release gate: each cell's p of "worse
  than the baseline by the margin", Holm-adjusted over the cells; a cell fails the gate
  when it is shown worse by more than the margin (``decisions.ReleaseGate``, decided here);
- each called cell whose two sides' spreads differ by ``promise.SPREAD_FLAG`` or more is
  marked outside the measured promise (``promise``);
- a ``compare --sequential`` comparison: the rule over the looks its folders hold
  (``looks.SequentialOutcome``), and its runs' pending jobs in the families the rule chose
  not to ask are no reason for an "incomplete" warning.

A suite with fewer than ``MIN_FAMILIES`` families (the historical suites' three dates) gets
points and differences but no interval, no p-value and so no verdict.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from analysis.loading.comparison import ComparisonRuns
from analysis.loading.logs.outputs import family_sort_key
from analysis.loading.run import Run

from .banners import Banner, run_banners
from .bootstrap import (
    DEFAULT_LEVEL,
    DEFAULT_REPLICATES,
    DEFAULT_SEED,
    MIN_FAMILIES,
    family_bootstrap,
    interval_refusal,
)
from .decisions import CellKey, ReleaseGate, Verdict, verdict
from .design import Design, design_of
from .diff import check_comparable
from .facts import RunFacts, run_facts
from .family_test import (
    DEFAULT_METHOD,
    Method,
    as_method,
    detectable_effect,
    family_p_values,
    paired_family_test,
)
from .looks import SequentialOutcome, sequential_outcome
from .metrics import SCORED, STATISTICS, compute_metrics
from .multiple import holm
from .output_scores import score_columns, scored_outputs
from .paired import common_outputs
from .promise import outside_promise, spread_ratio

__all__ = [
    "HIGHER_IS_BETTER",
    "Comparison",
    "SuiteComparison",
    "compare_runs",
    "refusal",
    "sequential_look",
]

# The metrics a comparison can judge; crps and logscore need the runs' answers (``Run.answers``).
COMPARED = ("mape", "nmae", "within5", "lar", "crps", "logscore")
HIGHER_IS_BETTER = frozenset({"within5"})  # every other metric is an error: lower is better
ALPHA = 0.05


@dataclass(frozen=True, eq=False)
class SuiteComparison:
    """One suite: ``models`` (the baseline first) that have a run of it, and their numbers.

    Arrays are (model, decoder, condition) for each model's own metric and (later model,
    decoder, condition) for the paired differences against the baseline.
    """

    suite: str
    models: tuple[str, ...]
    runs: tuple[Run, ...]
    facts: tuple[RunFacts, ...]
    design: Design
    families: tuple[str, ...]  # the families with an output in some run, in order
    point: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    n_ok: np.ndarray
    delta: np.ndarray
    delta_lo: np.ndarray
    delta_hi: np.ndarray
    n_common: np.ndarray
    p: np.ndarray  # NaN: no p-value (too few families, no replicates, no common unit)
    p_holm: np.ndarray  # filled in over the whole comparison
    # Per later model, the (F, D, C) family sums of the differences and their counts: the
    # verdict test's whole input, kept for the MDE and the gate (both need m first).
    family_diffs: np.ndarray
    family_counts: np.ndarray
    verdicts: np.ndarray  # (later, D, C) objects: a Verdict, or None without a p-value
    mde: np.ndarray  # minimum detectable effect of each "no clear difference" (else NaN)
    gate_p: np.ndarray  # Holm-adjusted p of "worse by more than the margin" (NaN: no gate)
    # The two sides' spread ratio over the paired units (promise.spread_ratio), and the
    # called cells it puts outside the measured promise (decided with the verdicts).
    spread: np.ndarray
    outside: np.ndarray

    @property
    def n_families(self) -> int:
        """Families with an output in some run."""
        return len(self.families)

    def key(self, k: int, d: int, c: int) -> CellKey:
        """Later model ``k`` (0-based) on decoder ``d`` × condition ``c``."""
        return CellKey(self.suite, self.models[k + 1], self.design.decoders[d],
                       self.design.conditions[c])  # fmt: skip


@dataclass(frozen=True, eq=False)
class Comparison:
    """Every suite of a comparison, judged together."""

    folder: Path
    comparison_id: str
    models: tuple[str, ...]
    suites: tuple[SuiteComparison, ...]
    metric: str
    n_boot: int
    seed: int
    level: float
    alpha: float
    m: int  # cells with a p-value: the number the correction divides by
    banners: tuple[Banner, ...]
    missing: tuple[tuple[str, str], ...]  # (suite, model) cells not started
    suite_names: tuple[str, ...] = ()  # every suite of the comparison, run or not
    gate: ReleaseGate | None = None  # --fail-on-worse: decided here (None: no gate asked)
    test: str = DEFAULT_METHOD  # the verdict test (family_test: TEST_NAMES, PROMISES)
    sequential: SequentialOutcome | None = None  # compare --sequential: the rule's outcome

    @property
    def lower_is_better(self) -> bool:
        """Whether a lower metric is better (errors) or higher (within 5%)."""
        return self.metric not in HIGHER_IS_BETTER


def _suite(
    suite: str,
    models: list[str],
    runs: list[Run],
    statistic: int,
    n_boot: int,
    seed: int,
    level: float,
    alpha: float,
    method: Method,
) -> SuiteComparison:
    base = runs[0]
    for other in runs[1:]:
        check_comparable(base, other)
    design = design_of(base.manifest, base.outputs, *(r.outputs for r in runs[1:]))
    families = tuple(
        sorted({str(f) for r in runs for f in r.outputs.family_names}, key=family_sort_key)
    )
    n_d, n_c = len(design.decoders), len(design.conditions)
    shape = (len(runs), n_d, n_c)
    point, lo, hi = np.full(shape, np.nan), np.full(shape, np.nan), np.full(shape, np.nan)
    n_ok = np.zeros(shape, np.int64)
    facts = []
    scores = [_scores(run) for run in runs] if STATISTICS[statistic] in SCORED else None
    for i, run in enumerate(runs):
        metrics = compute_metrics(run.outputs, design, None if scores is None else scores[i])
        boot = family_bootstrap(metrics.totals, n_boot=n_boot, seed=seed, level=level)
        point[i], lo[i], hi[i] = metrics.point[statistic], boot.lo[statistic], boot.hi[statistic]
        n_ok[i] = metrics.n_ok
        facts.append(run_facts(run, metrics))
    later = (len(runs) - 1, n_d, n_c)
    delta, d_lo, d_hi, p = (np.full(later, np.nan) for _ in range(4))
    n_common = np.zeros(later, np.int64)
    spread = np.full(later, np.nan)
    with_intervals = n_boot > 0 and len(families) >= MIN_FAMILIES
    diffs = np.zeros((len(runs) - 1, len(families), n_d, n_c))
    counts = np.zeros_like(diffs)
    for k, other in enumerate(runs[1:]):
        pair = None if scores is None else (scores[0], scores[k + 1])
        paired = common_outputs(base.outputs, other.outputs, design, families, pair)
        delta[k] = paired.delta()[statistic]
        n_common[k] = paired.units()[statistic]
        diffs[k] = paired.other.sums[:, statistic] - paired.base.sums[:, statistic]
        counts[k] = paired.other.counts[:, statistic]
        spread[k] = spread_ratio(
            paired.base.sums[:, statistic], paired.other.sums[:, statistic], counts[k]
        )
        if not with_intervals:
            continue
        flat = (len(families), n_d * n_c)
        test = paired_family_test(
            diffs[k].reshape(flat),
            counts[k].reshape(flat),
            alpha,
            n_flips=n_boot,
            seed=seed,
            method=method,
        )
        d_lo[k], d_hi[k] = test.lo.reshape(n_d, n_c), test.hi.reshape(n_d, n_c)
        p[k] = test.p.reshape(n_d, n_c)
    return SuiteComparison(
        suite, tuple(models), tuple(runs), tuple(facts), design, families,
        point, lo, hi, n_ok, delta, d_lo, d_hi, n_common, p, np.full(later, np.nan),
        diffs, counts, np.full(later, None, object), np.full(later, np.nan),
        np.full(later, np.nan), spread, np.zeros(later, bool),
    )  # fmt: skip


def _scores(run: Run) -> np.ndarray:
    """A run's predicted-distribution scores per output (``output_scores.score_columns``);
    all n/a when its answers were not read."""
    if run.answers is None:
        return np.full((len(SCORED), len(run.outputs)), np.nan)
    return score_columns(run.outputs, scored_outputs(run.answers), run.answers)


def _banners(
    data: ComparisonRuns, suites: list[SuiteComparison], looked: SequentialOutcome | None
) -> list[Banner]:
    found: list[Banner] = []
    for suite, model in ((c.suite, c.model) for c in data.cells if c.run is None):
        found.append(
            Banner(
                "incomplete",
                f"{suite} · {model} has not started; the summary leaves it out "
                f"(`numericjev resume {data.folder}` runs it)",
            )
        )
    sources = {
        f"{s.suite} · {m}": r.manifest.source_hash
        for s in suites
        for m, r in zip(s.models, s.runs, strict=True)
    }
    if len(set(sources.values())) > 1:
        listed = ", ".join(f"{cell} {str(h)[:12]}" for cell, h in sources.items())
        found.append(
            Banner(
                "sides_differ",
                f"the runs were made by different harness sources ({listed}): prompts or "
                "decoders may differ between models, not only the models",
            )
        )
    for s in suites:
        if len({r.manifest.decoders for r in s.runs}) > 1:
            found.append(
                Banner("sides_differ", f"suite {s.suite}: the models' runs ask other decoders")
            )
        for m, run, f in zip(s.models, s.runs, s.facts, strict=True):
            # The jobs of the families a stopped sequential rule chose not to ask are pending
            # on purpose: no reason for a warning.
            unasked = 0 if looked is None else looked.unasked_jobs(f.n_jobs)
            found += run_banners(run, f, f"{s.suite} · {m} (run {f.run_id})", unasked)
    return found


def _sequential(
    data: ComparisonRuns,
    suites: list[SuiteComparison],
    lower_is_better: bool,
    method: Method,
    look: int | None = None,
) -> SequentialOutcome | None:
    """The sequential rule's outcome when ``data`` is a ``compare --sequential`` comparison
    (one suite) whose baseline has run, else None."""
    plan = data.record["options"].get("sequential")
    if not plan or not suites:
        return None
    s = suites[0]
    cells = [
        f"{model} · {dec} · {cond}"
        for model in s.models[1:]
        for dec in s.design.decoders
        for cond in s.design.conditions
    ]
    return sequential_outcome(
        plan,
        s.suite,
        s.families,
        s.family_diffs,
        s.family_counts,
        cells,
        requests=sum(c.requests for c in data.cells),
        cost_usd=sum(c.cost_usd for c in data.cells),
        lower_is_better=lower_is_better,
        method=method,
        look=look,
    )


def sequential_look(data: ComparisonRuns, look: int) -> SequentialOutcome:
    """The sequential rule after ``look`` on a ``compare --sequential`` comparison's folders,
    with its recorded metric and test (no bootstrap): the harness asks it whether every cell
    has stopped (``SequentialOutcome.settled``)."""
    metric = str(data.summary_option("metric", "mape"))
    method = as_method(data.summary_option("test", DEFAULT_METHOD))
    looked = compare_runs(data, metric, n_boot=0, method=method, look=look).sequential
    if looked is None:
        raise ValueError(f"{data.folder} is not a sequential comparison with a baseline run")
    return looked


def compare_runs(
    data: ComparisonRuns,
    metric: str = "mape",
    n_boot: int = DEFAULT_REPLICATES,
    seed: int = DEFAULT_SEED,
    level: float = DEFAULT_LEVEL,
    alpha: float = ALPHA,
    margin: float | None = None,
    method: Method = DEFAULT_METHOD,
    look: int | None = None,
) -> Comparison:
    """Summarise a loaded comparison (``load_comparison_runs``): see the module docstring.

    ``margin`` (in the metric's points, 0 or more) asks for the release gate. ``method``:
    the verdict test (``family_test.DEFAULT_METHOD``; ``"t"``: the cluster-robust t), for
    the p-values, the intervals, the MDEs and the gate alike. ``look``: a sequential
    comparison's rule over that many looks (None: as many as its folders hold).

    Raises ``DiffRefusedError`` when two runs of one suite have different case sets.
    """
    if metric not in COMPARED:
        raise ValueError(f"metric must be one of {COMPARED}; got {metric!r}")
    statistic = STATISTICS.index(metric)
    suites = []
    for suite in data.suites:
        cells = [c for c in data.cells if c.suite == suite and c.run is not None]
        if not cells or cells[0].model != data.models[0]:
            continue  # no baseline run of this suite yet: nothing to compare with
        runs = [c.run for c in cells if c.run is not None]
        suites.append(
            _suite(
                suite,
                [c.model for c in cells],
                runs,
                statistic,
                n_boot,
                seed,
                level,
                alpha,
                method,
            )
        )
    # One correction over the whole comparison: every later model × suite × decoder ×
    # condition with a p-value.
    everything = np.concatenate([s.p.ravel() for s in suites]) if suites else np.empty(0)
    adjusted = holm(everything)
    at = 0
    for s in suites:
        size = s.p.size
        s.p_holm[...] = adjusted[at : at + size].reshape(s.p.shape)
        at += size
    m = int(np.isfinite(everything).sum())
    lower_is_better = metric not in HIGHER_IS_BETTER
    gates = [_judge(s, alpha, m, lower_is_better, margin, n_boot, seed, method) for s in suites]
    gate = None
    if margin is not None:
        adjusted = holm(np.concatenate([g.ravel() for g in gates])) if gates else np.empty(0)
        at = 0
        for s in suites:
            s.gate_p[...] = adjusted[at : at + s.p.size].reshape(s.p.shape)
            at += s.p.size
        failed = [
            s.key(k, d, c)
            for s in suites
            for k, d, c in zip(*np.nonzero(s.gate_p < alpha), strict=True)
        ]
        gate = ReleaseGate(margin, tuple(failed))
    looked = _sequential(data, suites, lower_is_better, method, look)
    return Comparison(
        folder=data.folder,
        comparison_id=data.record["comparison_id"],
        models=data.models,
        suites=tuple(suites),
        metric=metric,
        n_boot=n_boot,
        seed=seed,
        level=level,
        alpha=alpha,
        m=m,
        banners=tuple(_banners(data, suites, looked)),
        missing=tuple((c.suite, c.model) for c in data.cells if c.run is None),
        suite_names=data.suites,
        gate=gate,
        test=method,
        sequential=looked,
    )


def _judge(
    s: SuiteComparison,
    alpha: float,
    m: int,
    lower_is_better: bool,
    margin: float | None,
    n_boot: int,
    seed: int,
    method: Method,
) -> np.ndarray:
    """Fill in the suite's verdicts and MDEs; return its unadjusted gate p-values."""
    gate = np.full(s.p.shape, np.nan)
    n_f, shape = s.family_diffs.shape[1], s.p.shape[1:]
    for k in range(s.p.shape[0]):
        for d, c in np.ndindex(*shape):
            s.verdicts[k, d, c] = verdict(
                float(s.p_holm[k, d, c]), float(s.delta[k, d, c]), alpha, lower_is_better
            )
        called = np.array(
            [v in (Verdict.BETTER, Verdict.WORSE) for v in s.verdicts[k].ravel()], bool
        ).reshape(shape)
        s.outside[k] = outside_promise(s.spread[k], called)
        if not np.isfinite(s.p[k]).any():
            continue
        diffs = s.family_diffs[k].reshape(n_f, -1)
        counts = s.family_counts[k].reshape(n_f, -1)
        mde = detectable_effect(diffs, counts, alpha / max(m, 1), n_boot, seed, method)
        mde = mde.reshape(shape)
        unclear = s.verdicts[k] == Verdict.UNCLEAR
        s.mde[k] = np.where(unclear, mde, np.nan)
        if margin is not None:
            # "Worse by the margin" sits on the worse side of 0; only a difference beyond it
            # can fail the gate (the two-sided p at the shifted null, so margin 0 is "worse").
            null = margin if lower_is_better else -margin
            p = family_p_values(diffs, counts, null, n_boot, seed, method).reshape(shape)
            beyond = (s.delta[k] > null) if lower_is_better else (s.delta[k] < null)
            gate[k] = np.where(np.isfinite(s.p[k]), np.where(beyond, p, 1.0), np.nan)
    return gate


def refusal(s: SuiteComparison, n_boot: int) -> str | None:
    """Why a suite has no intervals and no verdicts, or None."""
    if n_boot <= 0:
        return "no bootstrap replicates (--bootstrap 0), so no intervals and no verdicts"
    return interval_refusal(s.n_families)
