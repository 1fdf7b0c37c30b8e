"""The summary of a comparison: Markdown tables, the JSON object, and the counts of verdicts."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Any

from analysis.loading.names import condition_label, decoder_label
from analysis.statistics.comparison import Comparison, SuiteComparison, refusal
from analysis.statistics.decisions import Verdict
from analysis.statistics.facts import RunFacts
from analysis.statistics.family_test import PROMISES, TEST_NAMES
from analysis.statistics.promise import SPREAD_FLAG

from .json_numbers import banners_to_list, number
from .markdown import Table, fmt_interval, warning_lines
from .sequential import saved_line, sequential_lines, sequential_record

__all__ = [
    "METRIC_LABEL",
    "Cell",
    "comparison_markdown",
    "comparison_tables",
    "comparison_title",
    "comparison_to_dict",
    "counts_line",
    "notices",
    "test_line",
    "verdict_cells",
    "verdict_counts",
]

METRIC_LABEL = {
    "mape": "MAPE",
    "nmae": "NMAE",
    "within5": "Within 5%",
    "lar": "LAR ×100",
    "crps": "CRPS",
    "logscore": "Log score",
}
# Each metric's unit in the table's note (every other metric: %).
_UNIT = {
    "lar": "hundredths of ln(value/target)",
    "crps": "% of U−L (the predicted distribution's CRPS, over outputs scored in both runs)",
    "logscore": "nats (the predicted distribution's density log score −ln(m·N/w) at y, over "
    "outputs scored in both runs)",
}
_NO_VERDICT = "no verdict"


def _p(value: float) -> str:
    return "—" if math.isnan(value) else f"{value:.4f}"


def notices(c: Comparison) -> list[str]:
    """Each notice (simulated, oracle) with the models it applies to."""
    found: dict[str, list[str]] = {}
    for s in c.suites:
        for model, f in zip(s.models, s.facts, strict=True):
            if f.notice and model not in found.setdefault(f.notice, []):
                found[f.notice].append(model)
    return [f"{notice} ({', '.join(models)})" for notice, models in found.items()]


def comparison_title(c: Comparison) -> str:
    """``Comparison: B, C against A · suites …`` (the folder is named on the next line)."""
    later = ", ".join(c.models[1:])
    return f"Comparison: {later} against {c.models[0]} · suites {', '.join(c.suite_names)}"


@dataclass(frozen=True)
class Cell:
    """One later model against the baseline on one suite × decoder × condition."""

    suite: str
    decoder: str
    condition: str
    model: str
    d: int
    cond: int
    k: int
    verdict: Verdict | None  # decided in analysis.statistics; None: no p-value

    @property
    def said(self) -> str:
        """The verdict's words (``no verdict`` without a p-value)."""
        return _NO_VERDICT if self.verdict is None else self.verdict.value

    def delta(self, s: SuiteComparison) -> tuple[float, float, float]:
        """Δ model − baseline with its interval."""
        at = (self.k, self.d, self.cond)
        return float(s.delta[at]), float(s.delta_lo[at]), float(s.delta_hi[at])


def verdict_cells(c: Comparison, s: SuiteComparison) -> list[Cell]:
    """Every cell that either run asked, in table order, with its verdict."""
    cells = []
    for d, decoder in enumerate(s.design.decoders):
        for cond, condition in enumerate(s.design.conditions):
            for k, model in enumerate(s.models[1:]):
                if s.n_common[k, d, cond] == 0 and math.isnan(s.point[k + 1, d, cond]):
                    continue  # neither run asked this decoder × condition
                cells.append(
                    Cell(
                        s.suite,
                        decoder_label(decoder, s.suite),
                        condition_label(condition),
                        model,
                        d,
                        cond,
                        k,
                        s.verdicts[k, d, cond],  # decided once, in analysis.statistics
                    )
                )
    return cells


def outside_note(s: SuiteComparison, k: int, d: int, cond: int) -> str | None:
    """A called cell outside the measured promise: how far its sides' spreads differ."""
    if not s.outside[k, d, cond]:
        return None
    ratio = float(s.spread[k, d, cond])
    times = "one side has no spread" if math.isinf(ratio) else f"spreads differ ×{ratio:.1f}"
    return f"{times}: outside the measured promise"


def verdict_text(c: Comparison, s: SuiteComparison, cell: Cell) -> str:
    """The verdict as shown: with the MDE beside "no clear difference", the note of a
    called cell outside the measured promise, and the gate."""
    at = (cell.k, cell.d, cell.cond)
    text = cell.said
    if math.isfinite(s.mde[at]):
        text += f" (MDE {s.mde[at]:.2f})"
    elif s.mde[at] == math.inf:  # the bootstrap-t's resamples cannot reach alpha / m here
        text += " (MDE unbounded: too few families to call any difference)"
    elif cell.verdict is Verdict.UNCLEAR and s.delta_lo[at] == s.delta_hi[at] == 0:
        text += " (Δ 0 in every family)"  # no spread at all: an MDE would mean nothing
    note = outside_note(s, *at)
    if note is not None:
        text += f" · {note}"
    if c.gate is not None and c.gate.fails(s.key(*at)):
        text += f" · fails the gate (worse by > {c.gate.margin:g})"
    return text


def _rows(c: Comparison, s: SuiteComparison) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = []
    for cell in verdict_cells(c, s):
        d, cond, k = cell.d, cell.cond, cell.k
        rows.append(
            (
                verdict_text(c, s, cell),
                s.suite,
                cell.decoder,
                cell.condition,
                cell.model,
                fmt_interval(s.point[0, d, cond], s.lo[0, d, cond], s.hi[0, d, cond]),
                fmt_interval(s.point[k + 1, d, cond], s.lo[k + 1, d, cond], s.hi[k + 1, d, cond]),
                fmt_interval(*cell.delta(s)),
                str(int(s.n_common[k, d, cond])),
                _p(s.p[k, d, cond]),
                _p(s.p_holm[k, d, cond]),
            )
        )
    return rows


def verdict_counts(c: Comparison) -> Counter[str]:
    """How many cells got each verdict (``no verdict``: no p-value)."""
    return Counter(cell.said for s in c.suites for cell in verdict_cells(c, s))


def test_line(c: Comparison) -> str:
    """The verdict test's name and its promise, one sentence (``--test``)."""
    return f"{TEST_NAMES[c.test]} (--test {c.test}): {PROMISES[c.test]}"


def counts_line(c: Comparison) -> str:
    counts = verdict_counts(c)
    metric = METRIC_LABEL[c.metric]
    parts = [f"{counts[v]} {v}" for v in Verdict]
    line = f"Verdicts on {metric} at {c.level:.0%}, Holm-corrected over {c.m} cells: " + ", ".join(
        parts
    )
    if counts[_NO_VERDICT]:
        line += f"; {counts[_NO_VERDICT]} cells without a verdict"
    outside = sum(int(s.outside.sum()) for s in c.suites)
    if outside:
        line += f"; {outside} of them outside the measured promise (spreads differ)"
    return line + "."


def _served(f: RunFacts) -> str:
    return ", ".join(f"{name} ×{n:,}" for name, n in f.served_models) or "none reported"


def comparison_tables(c: Comparison) -> list[Table]:
    """The verdict table (every suite, decoder, condition and later model) and the runs."""
    metric = METRIC_LABEL[c.metric]
    base = c.models[0]
    better = "lower" if c.lower_is_better else "higher"
    header = (
        "Verdict",
        "Suite",
        "Decoder",
        "Condition",
        "Model",
        f"{metric} {base} (baseline)",
        f"{metric} model",
        "Δ model − baseline",
        "n",
        "p",
        "p (Holm)",
    )
    rows = [row for s in c.suites for row in _rows(c, s)]
    notes = [
        f"{metric} in {_UNIT.get(c.metric, '%')}. "
        f"Each model's {metric} is over its own ok outputs, with its "
        f"{c.level:.0%} family-bootstrap interval. Δ is over the n (job, decoder) outputs ok "
        "in both runs only, with the interval of the verdict test (the Δ it does not reject "
        f"at {c.alpha:g}; it excludes 0 exactly when p < {c.alpha:g}).",
        f"Verdict: better or worse ({better} {metric} is better) when the Holm-adjusted p is "
        f"below {c.alpha:g}, else no clear difference. p is the two-sided p-value of Δ = 0 "
        f"of the verdict test, {test_line(c)} (docs/comparing.md). MDE: the "
        "difference that cell would have been called with 80% power at Holm's first step "
        f'({c.alpha:g}/{c.m}); "no clear difference" is not "the same". Holm–'
        f"Bonferroni over all {c.m} cells compared (every suite × decoder × condition × "
        f"later model with a p-value) keeps the chance of any false verdict at or below "
        f"{c.alpha:.0%}; a cell whose {c.level:.0%} interval excludes 0 may still show no "
        "clear difference after the correction.",
    ]
    for s in c.suites:
        why = refusal(s, c.n_boot)
        if why is not None:
            notes.append(f"Suite {s.suite}: no verdict: {why}.")
    title = f"Verdicts: {metric}, each model against {base}, paired" + "".join(
        f" — {n}" for n in notices(c)
    )
    if any(s.outside.any() for s in c.suites):
        notes.append(
            "Outside the measured promise: a called cell whose two sides' spreads (standard "
            f"deviations of their family means) differ ×{SPREAD_FLAG:g} or more, where one "
            "model may be steadier than the other at the same mean, which no test of a mean "
            "can promise to tell from a difference (docs/comparing.md, the rates it marks)."
        )
    if c.gate is not None:
        failed = c.gate.failed
        notes.append(
            f"Release gate (--fail-on-worse, margin {c.gate.margin:g}): a cell fails when it "
            f"is shown worse than {base} by more than {c.gate.margin:g} points (the test at the "
            f"shifted null, Holm over the cells, {c.alpha:g}): "
            + (f"{len(failed)} cell(s) fail." if failed else "every cell passes.")
        )
    tables = [Table(title, header, tuple(rows), tuple(notes), left=5)]
    runs = []
    for s in c.suites:
        for model, f in zip(s.models, s.facts, strict=True):
            pending = "?" if f.jobs_pending is None else f"{f.jobs_pending:,}"
            unasked = 0 if c.sequential is None else c.sequential.unasked_jobs(f.n_jobs)
            if unasked and f.jobs_pending is not None:  # left by the sequential rule
                pending = f"{max(f.jobs_pending - unasked, 0):,} (+{unasked:,} unasked)"
            runs.append(
                (
                    s.suite,
                    model,
                    str(f.run_id).rsplit("/", 1)[-1],
                    f"{f.jobs_done:,}/{f.jobs_failed:,}/{pending}",
                    f"{f.outputs_ok:,}/{f.outputs_failed:,}/{f.outputs_missing:,}",
                    _served(f),
                    "oracle" if f.oracle else "simulated" if f.simulated else "",
                )
            )
    runs += [(suite, model, "not started", "", "", "", "") for suite, model in c.missing]
    tables.append(
        Table(
            "Runs compared",
            (
                "Suite",
                "Model",
                "Run folder",
                "Jobs done/failed/pending",
                "Outputs ok/failed/missing",
                "Served model(s)",
                "Mark",
            ),
            tuple(runs),
            (f"Run folders are inside {c.folder}.",),
            left=3,
        )
    )
    return tables


def comparison_markdown(c: Comparison) -> str:
    """The whole summary printed by ``compare`` and written to ``summary.md``."""
    head = [f"# {comparison_title(c)}", "", f"Comparison folder: {c.folder}", ""]
    # A sequential comparison opens with where its rule stopped and what that saved.
    head += [f"**{saved_line(c.sequential)}**", ""] if c.sequential is not None else []
    head += [f"> **{notice}**" for notice in notices(c)]
    head += [""] if notices(c) else []
    head += warning_lines(b.message for b in c.banners)
    head += [counts_line(c), "", f"Verdict test: {test_line(c)}."]
    tables = [t.to_markdown() for t in comparison_tables(c)]
    if c.sequential is not None:
        lines = "\n".join(sequential_lines(c.sequential))
        tables.append(f"## Sequential (compare --sequential)\n\n{lines}")
    return "\n\n".join(["\n".join(head).rstrip(), *tables]) + "\n"


def comparison_to_dict(c: Comparison) -> dict[str, Any]:
    """The summary's numbers as one JSON-ready object (NaN written as null)."""

    def arm(s: SuiteComparison, m: int, d: int, cond: int) -> dict[str, Any]:
        """Model ``m``'s own metric in one cell (0: the baseline)."""
        return {
            "model": s.models[m],
            "value": number(s.point[m, d, cond]),
            "lo": number(s.lo[m, d, cond]),
            "hi": number(s.hi[m, d, cond]),
            "n_ok": int(s.n_ok[m, d, cond]),
        }

    rows = []
    for s in c.suites:
        for d, decoder in enumerate(s.design.decoders):
            for cond, condition in enumerate(s.design.conditions):
                for k in range(len(s.models) - 1):
                    rows.append(
                        {
                            "suite": s.suite,
                            "decoder": decoder,
                            "condition": condition,
                            "baseline": arm(s, 0, d, cond),
                            "model": arm(s, k + 1, d, cond),
                            "delta": number(s.delta[k, d, cond]),
                            "delta_lo": number(s.delta_lo[k, d, cond]),
                            "delta_hi": number(s.delta_hi[k, d, cond]),
                            "n_common": int(s.n_common[k, d, cond]),
                            "p": number(s.p[k, d, cond]),
                            "p_holm": number(s.p_holm[k, d, cond]),
                            "verdict": s.verdicts[k, d, cond],
                            "mde": number(s.mde[k, d, cond]),
                            "spread_ratio": number(s.spread[k, d, cond]),
                            "outside_promise": outside_note(s, k, d, cond),
                            "gate_p_holm": number(s.gate_p[k, d, cond]),
                            "fails_gate": c.gate is not None and c.gate.fails(s.key(k, d, cond)),
                        }
                    )
    runs = [
        {
            "suite": s.suite,
            "model": model,
            "folder": str(run.manifest.folder),
            "run_id": f.run_id,
            "simulated": f.simulated,
            "oracle": f.oracle,
            "notice": f.notice,
            "jobs_done": f.jobs_done,
            "jobs_failed": f.jobs_failed,
            "jobs_pending": f.jobs_pending,
            "outputs_ok": f.outputs_ok,
            "outputs_failed": f.outputs_failed,
            "outputs_missing": f.outputs_missing,
            "served_models": dict(f.served_models),
            "cost_usd": f.cost_usd,
        }
        for s in c.suites
        for model, run, f in zip(s.models, s.runs, s.facts, strict=True)
    ]
    return {
        "comparison": c.comparison_id,
        "folder": str(c.folder),
        # First after the folder: a sequential comparison's stop and what it saved.
        "sequential": None if c.sequential is None else sequential_record(c.sequential),
        "models": list(c.models),
        "baseline": c.models[0],
        "metric": c.metric,
        "lower_is_better": c.lower_is_better,
        "test": {"name": c.test, "test": TEST_NAMES[c.test], "promise": PROMISES[c.test]},
        "level": c.level,
        "alpha": c.alpha,
        "correction": {
            "method": "holm",
            "m": c.m,
            "cells": "every suite × decoder × condition × later model with a p-value",
            "p_value": f"two-sided, {TEST_NAMES[c.test]} over families; the interval inverts it",
            "mde": "80% power, two-sided at alpha/m",
        },
        "gate": None
        if c.gate is None
        else {
            "margin": c.gate.margin,
            "failed": [
                {"suite": f.suite, "model": f.model, "decoder": f.decoder, "condition": f.condition}
                for f in c.gate.failed
            ],
        },
        "bootstrap": {
            "replicates": c.n_boot,
            "seed": c.seed,
            "resampled_unit": "family",
            "paired": "the same resampled families for every model of a suite",
            "paired_units": "(job, decoder) outputs ok in both runs",
            "intervals_refused": {
                s.suite: why for s in c.suites if (why := refusal(s, c.n_boot)) is not None
            },
        },
        "verdicts": dict(verdict_counts(c)),
        "warnings": banners_to_list(c.banners),
        "rows": rows,
        "runs": runs,
        "not_started": [{"suite": s, "model": m} for s, m in c.missing],
    }
