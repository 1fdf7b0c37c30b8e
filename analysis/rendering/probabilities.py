"""The Probabilities section of ``analyze``: its Markdown tables (``probability_json``: JSON)."""

from __future__ import annotations

import math

from analysis.loading.names import condition_label, decoder_label
from analysis.statistics.bootstrap import DEFAULT_REPLICATES, DEFAULT_SEED, MIN_FAMILIES
from analysis.statistics.calibration import N_BINS, CalibrationRow
from analysis.statistics.divergence import DivergenceGroup
from analysis.statistics.probabilities import ProbabilityStats

from .markdown import Table, fmt, fmt_interval

__all__ = ["SECTION_TITLE", "no_probabilities_line", "probability_section", "probability_tables"]

SECTION_TITLE = "Probabilities"


def _pct(value: float) -> str:
    return fmt(100.0 * value, 1)


def _read_table(p: ProbabilityStats, suite: str, suffix: str) -> Table:
    c = p.counts
    sums = "n/a"
    if c.with_probabilities:
        sums = (
            f"{c.raw_sum_min:.2f}–{c.raw_sum_max:.2f}; {c.off_by_more_than_001:,} of "
            f"{c.with_probabilities:,} outside [0.99, 1.01]"
        )
    others = ", ".join(f"{decoder_label(d, suite)} {n:,}" for d, n in p.not_intervals)
    rows = [
        (
            "Outputs read as interval paths",
            f"{p.units:,} of {p.outputs_read:,} ok outputs"
            + (f" (not interval choices, not read: {others})" if others else ""),
        ),
        ("Their questions answered", f"{c.answered:,}"),
        ("… with probabilities", f"{c.with_probabilities:,}"),
        ("… without probabilities", f"{c.without_probabilities:,}"),
        ("Raw probability sums", sums),
    ]
    skipped = c.unusable + c.choice_mismatch + c.duplicates
    if skipped:
        rows.append(
            (
                "Answers not used",
                f"{c.unusable:,} unusable (sum 0 or wrong option count), {c.choice_mismatch:,} "
                f"selected a label other than the trace's, {c.duplicates:,} duplicates",
            )
        )
    if not c.requests_present:
        rows.append(("requests.jsonl", "absent: no answers to read"))
    notes = (
        "Each answer's probabilities are read over its question's options: a label missing "
        "from `probabilities` gets 0; the vector is then renormalised to sum 1 (Jev rounds "
        "to 2 decimals, so raw sums drift).",
        "No interval: counts of what this run recorded; nothing here is estimated.",
    )
    title = f"{SECTION_TITLE}: what was read{suffix}"
    return Table(title, ("Item", "Value"), tuple(rows), notes, left=2)


def _bound_cells(g: DivergenceGroup) -> tuple[str, str, str, str]:
    if math.isnan(g.bound):
        return "n/a", "n/a", f"n/a ({g.not_covered})", "n/a"
    # The inequality holds by construction; a negative slack can only be a bug, so say so.
    slack = fmt(g.percent(g.slack)) if g.holds else f"**{fmt(g.percent(g.slack))} (violated)**"
    return (
        fmt(g.percent(g.bound)),
        fmt(g.percent(g.sharper)),
        slack,
        fmt(g.percent(g.sharper_slack)),
    )


def _bound_table(p: ProbabilityStats, suite: str, suffix: str) -> Table:
    rows = []
    for g in p.divergence:
        diverged = sum(r.diverged for r in g.depths)
        bound, sharper, slack, sharper_slack = _bound_cells(g)
        rows.append(
            (
                decoder_label(g.decoder, suite),
                condition_label(g.condition),
                f"{g.n:,}",
                str(g.n_cells),
                str(g.branching),
                str(len(g.depths)),
                _pct(diverged / g.n),
                fmt(g.percent(g.mean_error)),
                bound,
                sharper,
                slack,
                sharper_slack,
            )
        )
    notes = [
        'Paper, Proposition "First-divergence error bound": E|ŷ−y| ≤ ε + Σ_d W_{d−1}·Pr(E_d), '
        "E_d = the first selected interval excluding y is at depth d, W_{d−1} = ε⌈N/K^{d−1}⌉. "
        "Pr(E_d) are this run's rates; K = options of the first question (N for direct "
        "choice); D = deepest path. Sharper: the Appendix's form, ε·Pr(no divergence) in "
        "place of ε.",
        "Mean error (E|ŷ−y|), Bound and Sharper bound in % of U−L (the mean error is the main "
        "table's NMAE over these outputs). The inequality holds by construction on every "
        "run, not only in expectation (on E_d both ŷ and y lie in the depth-(d−1) parent), so "
        "a 'holds' column would tell nothing: Slack = Bound − Mean error (and Sharper slack "
        "likewise) shows how loose the bound is, how much error the divergence rates would "
        "allow that this run did not make. It covers nested paths whose read-out is the final "
        "cell's lower endpoint, in-range targets.",
        "No interval: the bound and its slack describe this run's own outputs (the inequality "
        "holds on every run); the mean error's interval is the main table's NMAE.",
    ]
    for decoder, reason, n in p.left_out:
        notes.append(f"Left out: {n:,} {decoder_label(decoder, suite)} output(s), {reason}.")
    header = (
        "Decoder",
        "Condition",
        "n",
        "N",
        "K",
        "D",
        "Any E_d %",
        "Mean error",
        "Bound",
        "Sharper bound",
        "Slack",
        "Sharper slack",
    )
    title = f"First divergence and the paper's error bound{suffix}"
    return Table(title, header, tuple(rows), tuple(notes), left=2)


def _depth_table(p: ProbabilityStats, suite: str, suffix: str) -> Table:
    with_p = p.available
    rows = []
    for g in p.divergence:
        for r in g.depths:
            row = [
                decoder_label(g.decoder, suite),
                condition_label(g.condition),
                str(r.depth),
                str(r.w_cells),
                f"{r.at_risk:,}",
                _pct(r.pr),
                _pct(r.conditional),
            ]
            if with_p:
                row += [_pct(1.0 - r.mean_selected), _pct(r.mean_true)]
            row += [_pct(r.error_share), _pct(r.forced_share)]
            rows.append(tuple(row))
    header = ["Decoder", "Condition", "d", "W_{d−1}", "At risk", "Pr(E_d) %", "e_d %"]
    if with_p:
        header += ["1 − p̄(sel) %", "p̄(true) %"]
    header += ["Error share %", "Forced %"]
    notes = [
        "W_{d−1} in grid cells. At risk: outputs whose path reached depth d with y still in "
        "the parent. e_d = Pr(E_d | no divergence before d) = Pr(E_d)/Pr(at risk) (Appendix, "
        '"Conditional error probabilities"). Error share: part of Σ|ŷ−y| from outputs in '
        "E_d. Forced: of their error, the part the wrong turn at d already forced (distance "
        "from y to the nearest grid value of the selected interval); the rest came from "
        "refining inside the wrong interval.",
    ]
    if with_p:
        notes.append(
            "1 − p̄(sel): one minus the mean returned probability of the selected option, the "
            "model's own estimate of e_d; p̄(true): mean probability on the interval that held "
            "y. Both over the at-risk questions answered with probabilities."
        )
    notes.append(
        "No interval: a diagnostic of where this run's paths diverged, over few outputs at "
        "the deep levels (At risk); the main table's intervals carry the comparison."
    )
    title = f"First divergence by depth{suffix}"
    return Table(title, tuple(header), tuple(rows), tuple(notes), left=2)


def _ece(r: CalibrationRow) -> str:
    """ECE with its family-bootstrap interval, in percentage points."""
    lo, hi = r.ece_interval
    text = fmt(100.0 * r.reliability.ece, 1)
    return text if math.isnan(lo) else f"{text} [{fmt(100.0 * lo, 1)}, {fmt(100.0 * hi, 1)}]"


def _calibration_table(p: ProbabilityStats, suite: str, suffix: str) -> Table:
    rows = tuple(
        (
            "All decoders" if r.decoder == "all" else decoder_label(r.decoder, suite),
            condition_label(r.condition),
            f"{r.n:,}",
            _pct(r.mean_selected),
            _pct(r.accuracy),
            _ece(r),
            fmt(r.entropy_right),
            fmt(r.entropy_wrong),
            f"{r.n_wrong:,}",
            fmt(r.auroc),
        )
        for r in (*p.calibration, *p.pooled)
    )
    header = (
        "Decoder",
        "Condition",
        "Questions",
        "p̄(sel) %",
        "Accuracy %",
        "ECE (pp)",
        "H right",
        "H wrong",
        "Wrong",
        "AUROC(H)",
    )
    notes = (
        "Interval questions with an option holding y (after a path leaves y's interval no "
        "option is right; those are left out). p̄(sel): mean renormalised probability of the "
        "selected option; Accuracy: share whose selected interval held y. ECE = "
        f"Σ_b (n_b/n)·|accuracy_b − p̄_b| over {N_BINS} equal-width bins of p(sel), in "
        "percentage points, with its 95% family-bootstrap interval (10,000 replicates, seed "
        "20260923; ECE is biased upward by sampling noise in the bins, and a resample repeats "
        "families, so the interval may sit above the point). All decoders: each distinct question of a request once (tree, tree_mean "
        "and tree_median ask the same ones; counting each per decoder would weigh it twice "
        "or three times). H: entropy of the returned distribution, bits, mean on right and "
        "on wrong selections; AUROC(H): chance a wrong selection has the higher entropy "
        "(0.5: entropy says nothing; ties count ½).",
        "No interval on p̄(sel), Accuracy, H or AUROC(H): ECE, the calibration summary, carries "
        "it; these describe this run's questions behind it.",
    )
    title = f"Calibration of the selected option{suffix}"
    return Table(title, header, rows, notes, left=2)


def _reliability_table(pooled: tuple[CalibrationRow, ...], suffix: str) -> Table:
    edges = pooled[0].reliability.edges
    rows = []
    for b in range(len(edges) - 1):
        if not any(r.reliability.count[b] for r in pooled):
            continue
        close = "]" if b == len(edges) - 2 else ")"
        row = [f"[{edges[b]:.1f}, {edges[b + 1]:.1f}{close}"]
        for r in pooled:
            rel = r.reliability
            row += [f"{rel.count[b]:,}", _pct(rel.confidence[b]), _pct(rel.accuracy[b])]
        rows.append(tuple(row))
    header = ["p(sel) bin"]
    for r in pooled:
        name = condition_label(r.condition)
        header += [f"n {name}", f"p̄ {name} %", f"Accuracy {name} %"]
    notes = (
        f"All interval decoders pooled per condition; {N_BINS} equal-width bins of the "
        "selected option's renormalised probability, those empty in every condition not "
        "shown; n/a: empty bin. A calibrated model has accuracy ≈ p̄ in every bin (the report "
        "draws this as a reliability diagram).",
        "No interval: n counts; p̄ and accuracy per bin are the diagram's points, summed up by "
        "ECE with its interval in the table above.",
    )
    title = f"Reliability of the selected option's probability{suffix}"
    return Table(title, tuple(header), tuple(rows), notes)


def _order_table(p: ProbabilityStats, suite: str, suffix: str) -> Table:
    first, second = p.order_names
    rows = tuple(
        (
            decoder_label(r.decoder, suite),
            condition_label(r.condition),
            f"{r.n:,}",
            f"{r.n_cases:,}",
            *(
                fmt_interval(100.0 * value, 100.0 * lo, 100.0 * hi, 1)
                for value, (lo, hi) in zip(
                    (r.first, r.second, r.averaged, r.gain), r.intervals, strict=True
                )
            ),
        )
        for r in p.orders
    )
    header = (
        "Decoder",
        "Condition",
        "Questions",
        "Cases",
        f"{first.capitalize()} %",
        f"{second.capitalize()} %",
        "Averaged %",
        "Averaged − best (pp)",
    )
    notes = (
        f"Paired: the {first} and {second} runs of one case, condition and repeat, question "
        "by question where both asked the same question at the same step and an option held "
        "y. Each column: share of those questions whose pick is the interval holding y — "
        "each order's own selected label, or the argmax of the two renormalised "
        "distributions averaged (a t-way tie counts 1/t). Questions: n; Cases: output pairs.",
        f"Brackets: 95% percentile family-bootstrap intervals ({DEFAULT_REPLICATES:,} "
        f"replicates, seed {DEFAULT_SEED}, the families resampled as for the main table, each "
        f"with its pairs; none with fewer than {MIN_FAMILIES} families).",
    )
    title = f"Order-averaged probabilities{suffix}"
    return Table(title, header, rows, notes, left=2)


def probability_tables(p: ProbabilityStats, suite: str, suffix: str) -> list[Table]:
    """The section's tables; without probabilities, only what the traces alone give."""
    tables = [_read_table(p, suite, suffix)]
    if p.divergence:
        tables += [_bound_table(p, suite, suffix), _depth_table(p, suite, suffix)]
    if p.available:
        tables.append(_calibration_table(p, suite, suffix))
        if p.pooled:
            tables.append(_reliability_table(p.pooled, suffix))
        if p.orders:
            tables.append(_order_table(p, suite, suffix))
    return tables


def no_probabilities_line(p: ProbabilityStats) -> str | None:
    """The sentence that replaces the probability tables when no answer carried any."""
    if p.available:
        return None
    c = p.counts
    return (
        f"**This run's answers carry no probabilities** ({c.answered:,} interval questions "
        f"answered, {c.without_probabilities:,} without a `probabilities` object): no "
        "calibration, no order averaging. The first-divergence tables use the traces only."
    )


def probability_section(p: ProbabilityStats | None, suite: str, suffix: str) -> list[str]:
    """The section as Markdown lines: empty when there is nothing to show (no interval
    outputs, or the section was not computed)."""
    if p is None or (p.units == 0 and not p.available):
        return []
    lines = [f"## {SECTION_TITLE}", ""]
    line = no_probabilities_line(p)
    if line is not None:
        lines += [line, ""]
    for table in probability_tables(p, suite, suffix):
        lines += [table.to_markdown(), ""]
    return lines
