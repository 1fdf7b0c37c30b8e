"""Two runs of one suite compared: metric changes over the outputs ok in both runs, with
the verdict test's intervals (``family_test``, as ``compare``), and the outputs whose
values changed (no I/O)."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import numpy as np

from analysis.errors import DiffRefusedError
from analysis.loading.logs.outputs import Outputs, family_sort_key
from analysis.loading.probabilities.answers import AnswerLog, order_pair
from analysis.loading.run import Run

from .banners import Banner, diff_banners
from .bootstrap import (
    DEFAULT_LEVEL,
    DEFAULT_REPLICATES,
    DEFAULT_SEED,
    MIN_FAMILIES,
    interval_refusal,
)
from .design import Design, design_of
from .facts import RunFacts, run_facts
from .family_test import DEFAULT_METHOD, Method, paired_family_test
from .metrics import compute_metrics
from .output_scores import score_columns, scored_outputs
from .paired import common_outputs
from .probabilities import ProbabilityDiff, diff_probabilities

__all__ = ["ChangedOutput", "RunDiff", "check_comparable", "diff_runs"]


@dataclass(frozen=True)
class ChangedOutput:
    """One (job, decoder) whose decoded value differs between run A and run B."""

    job: str
    decoder: str
    condition: str
    domain: str
    target: str
    value_a: str
    value_b: str
    ape_a: float
    ape_b: float

    @property
    def delta_ape(self) -> float:
        """APE in B minus APE in A (percentage points)."""
        return self.ape_b - self.ape_a


@dataclass(frozen=True, eq=False)
class RunDiff:
    """B − A per decoder × condition for every statistic, shape (statistics, D, C).

    ``point_a`` and ``point_b`` are over the common units, the (job, decoder) outputs ok in
    both runs (``n_paired`` of them); ``unpaired_a``/``unpaired_b`` over each run's own ok
    outputs, for display beside them only.
    """

    facts_a: RunFacts
    facts_b: RunFacts
    design: Design
    n_boot: int
    seed: int
    level: float
    n_families: int
    point_a: np.ndarray
    point_b: np.ndarray
    delta_lo: np.ndarray
    delta_hi: np.ndarray
    n_paired: np.ndarray  # (statistics, D, C): common units of each difference
    unpaired_a: np.ndarray
    unpaired_b: np.ndarray
    n_own_a: np.ndarray  # (D, C): ok outputs of A (the unpaired means' units)
    n_own_b: np.ndarray
    n_compared: np.ndarray  # (D, C): (job, decoder) ok in both runs
    n_changed: np.ndarray  # (D, C): of those, value differs
    n_status_changed: np.ndarray  # (D, C): ok in one run, failed or absent in the other
    top: tuple[ChangedOutput, ...]
    min_families: int = MIN_FAMILIES
    banners: tuple[Banner, ...] = ()  # printed above the tables; --strict refuses on any
    probabilities: ProbabilityDiff | None = None  # None: not computed (no AnswerLogs given)

    @property
    def delta(self) -> np.ndarray:
        """Point differences B − A over the common units."""
        return self.point_b - self.point_a

    @property
    def refusal(self) -> str | None:
        """Why no interval is shown although replicates were asked for, else None."""
        return interval_refusal(self.n_families, self.min_families) if self.n_boot > 0 else None


def check_comparable(a: Run, b: Run) -> None:
    """Raise DiffRefusedError unless both runs have the same suite and case set."""
    ma, mb = a.manifest, b.manifest
    if ma.suite != mb.suite:
        raise DiffRefusedError(
            f"A is suite {ma.suite!r} but B is suite {mb.suite!r}; diff compares two runs of "
            "the same suite — pick two runs made with the same --suite"
        )
    if ma.case_hash != mb.case_hash:
        raise DiffRefusedError(
            f"the case sets differ (case_hash {str(ma.case_hash)[:12]} in A, "
            f"{str(mb.case_hash)[:12]} in B), so per-case changes would compare different "
            "questions — re-run B with the same suite parameters and seed as A"
        )


def _row_keys(outputs: Outputs) -> dict[tuple[str, str], int]:
    names = outputs.decoder_names
    pairs = zip(outputs.job, outputs.decoder.tolist(), strict=True)
    return {(job, names[d]): i for i, (job, d) in enumerate(pairs)}


def _same_value(a: str | None, b: str | None) -> bool:
    # Equal text is equal value; otherwise compare exactly ("0.40" equals "0.4").
    return a == b or (a is not None and b is not None and Decimal(a) == Decimal(b))


def _changes(a: Outputs, b: Outputs, design: Design, top: int) -> tuple[Any, ...]:
    n_d, n_c = len(design.decoders), len(design.conditions)
    compared = np.zeros((n_d, n_c), np.int64)
    changed = np.zeros_like(compared)
    status = np.zeros_like(compared)
    keys_a, keys_b = _row_keys(a), _row_keys(b)
    # Per-output columns gathered once (they are built from codes on each access).
    text_a, text_b, target_a = a.value_text, b.value_text, a.target_text
    ape_a, ape_b = a.ape, b.ape
    found: list[ChangedOutput] = []
    for key in keys_a.keys() | keys_b.keys():
        i, j = keys_a.get(key), keys_b.get(key)
        side, row = (a, i) if i is not None else (b, j)
        d = design.decoders.index(key[1])
        c = design.conditions.index(side.condition_names[side.condition[row]])
        if i is None or j is None or a.ok[i] != b.ok[j]:
            status[d, c] += 1
            continue
        if not a.ok[i]:
            continue
        compared[d, c] += 1
        if _same_value(text_a[i], text_b[j]):
            continue
        changed[d, c] += 1
        found.append(
            ChangedOutput(
                job=key[0],
                decoder=key[1],
                condition=design.conditions[c],
                domain=a.domain_names[a.domain[i]],
                target=target_a[i],
                value_a=str(text_a[i]),
                value_b=str(text_b[j]),
                ape_a=float(ape_a[i]),
                ape_b=float(ape_b[j]),
            )
        )
    # Largest |ΔAPE| first (undefined APE, target 0, last); job id then decoder break ties
    # so the list does not depend on the order in which the logs were written.
    found.sort(key=lambda o: (np.isnan(o.delta_ape), -abs(o.delta_ape), o.job, o.decoder))
    return compared, changed, status, tuple(found[:top])


def diff_runs(
    a: Run,
    b: Run,
    n_boot: int = DEFAULT_REPLICATES,
    seed: int = DEFAULT_SEED,
    top: int = 10,
    level: float = DEFAULT_LEVEL,
    answers: tuple[AnswerLog, AnswerLog] | None = None,
    method: Method = DEFAULT_METHOD,
) -> RunDiff:
    """Compare run B with run A (same suite and case set, else DiffRefusedError).

    Every difference is over the (job, decoder) outputs ok in both runs. With ``answers``
    (each run's ``load_answers``), the Probabilities figures of both runs are computed on
    the interval outputs ok in both. ``method``: the verdict test whose interval brackets
    each difference (``diff --test``, as ``compare``'s).
    """
    check_comparable(a, b)
    design = design_of(a.manifest, a.outputs, b.outputs)
    families = tuple(
        sorted(set(a.outputs.family_names) | set(b.outputs.family_names), key=family_sort_key)
    )
    # The predicted distributions' scores (crps, logscore) when the answers were read.
    scores = None
    if answers is not None:
        scores = (
            score_columns(a.outputs, scored_outputs(answers[0]), answers[0]),
            score_columns(b.outputs, scored_outputs(answers[1]), answers[1]),
        )
    paired = common_outputs(a.outputs, b.outputs, design, families, scores)
    point_a, point_b = paired.base.point(), paired.other.point()
    lo = hi = np.full(point_a.shape, np.nan)
    if n_boot > 0 and len(families) >= MIN_FAMILIES:
        # compare's test on the family sums of B − A over the common units: its interval.
        flat = (len(families), -1)
        test = paired_family_test(
            (paired.other.sums - paired.base.sums).reshape(flat),
            paired.other.counts.reshape(flat),
            alpha=1 - level,
            n_flips=n_boot,
            seed=seed,
            method=method,
        )
        lo, hi = test.lo.reshape(point_a.shape), test.hi.reshape(point_a.shape)
    compared, changed, status, found = _changes(a.outputs, b.outputs, design, top)
    metrics_a = compute_metrics(a.outputs, design, None if scores is None else scores[0])
    metrics_b = compute_metrics(b.outputs, design, None if scores is None else scores[1])
    facts_a, facts_b = run_facts(a, metrics_a), run_facts(b, metrics_b)
    return RunDiff(
        facts_a=facts_a,
        facts_b=facts_b,
        design=design,
        n_boot=n_boot,
        seed=seed,
        level=level,
        n_families=len(families),
        point_a=point_a,
        point_b=point_b,
        delta_lo=lo,
        delta_hi=hi,
        n_paired=paired.units(),
        unpaired_a=metrics_a.point,
        unpaired_b=metrics_b.point,
        n_own_a=metrics_a.n_ok,
        n_own_b=metrics_b.n_ok,
        n_compared=compared,
        n_changed=changed,
        n_status_changed=status,
        top=found,
        banners=diff_banners(a, b, facts_a, facts_b),
        probabilities=None
        if answers is None
        else diff_probabilities(
            answers[0],
            answers[1],
            design.decoders,
            design.conditions,
            order_pair(a.manifest.orders),
        ),
    )
