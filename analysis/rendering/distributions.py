"""The Distributions section of ``analyze`` (ours, not the paper's): Markdown and JSON."""

from __future__ import annotations

import math
from typing import Any

from analysis.loading.names import condition_label, decoder_label
from analysis.statistics.distributions import PIT_BINS, SCORES, DistributionRow
from analysis.statistics.probabilities import ProbabilityStats
from analysis.statistics.proper_scores import CENTRAL_LEVELS

from .markdown import Table, fmt, fmt_interval

__all__ = ["SECTION_TITLE", "distribution_section", "distribution_tables", "distributions_to_dict"]

SECTION_TITLE = "Distributions (ours, not in the paper)"


def _cell(r: DistributionRow, name: str, scale: float = 1.0, digits: int = 2) -> str:
    if not r.scored:
        return "n/a"
    lo, hi = r.interval[name]
    return fmt_interval(scale * r.mean[name], scale * lo, scale * hi, digits)


def _score_table(p: ProbabilityStats, suite: str, suffix: str) -> Table:
    assert p.distributions is not None
    log_scale = p.distributions.log_scale
    rows = tuple(
        (
            decoder_label(r.decoder, suite),
            condition_label(r.condition),
            f"{r.scored:,} of {r.n:,}",
            _cell(r, "crps"),
            *((_cell(r, "crps_log10", 100.0),) if log_scale else ()),
            _cell(r, "log_score"),
            _cell(r, "log_density"),
            f"{r.zero_mass:,}" if r.scored else "n/a",
        )
        for r in p.distributions.rows
    )
    header = (
        "Decoder",
        "Condition",
        "Scored",
        "CRPS (% of U−L)",
        *(("CRPS log10(abs y) ×100",) if log_scale else ()),
        "Log score",
        "Log score (density)",
        "True leaf mass 0",
    )
    notes = [
        "Each output's predicted distribution, piecewise uniform over grid cells. Trees: the "
        "leaves of the partition their path asked (the followed path's step distributions; "
        "each sibling not expanded uniform over its interval; direct choice: one leaf per "
        "cell). Index digits: the same as a ten-way tree over [0, 10^D) (the followed "
        "digits' distributions; each digit not followed uniform over the indices it "
        "stands for); index bits: a two-way tree, heaviest bit first, over [0, 2^B) (a bit "
        "not followed carries its exact mass under the bits' independence, uniform over "
        "its span); indices ≥ N keep their mass, as the decoders read them out. Threshold "
        "CDFs: the answers P(x ≤ z) projected onto a nondecreasing F (isotonic), mass "
        "F(b_{i+1}) − F(b_i) uniform over cell i. Scored against y's cell, at its centre "
        "(the decoders look for the cell holding y). Lower is better everywhere; [ ] the "
        "95% family-bootstrap interval.",
        "CRPS = ∫(F(x) − 1{x ≥ y})² dx, exact for the piecewise-uniform F, in % of U−L: the "
        "unit of NMAE, to which it reduces for a point mass (the headline: it compares "
        "decoders whatever their partitions, and never diverges). Log score: −ln of the "
        "mass of the leaf holding y; density form −ln(m·N/w) for a leaf of w cells, which "
        "compares decoders whose partitions differ. Outputs whose true leaf had mass 0 "
        "(probabilities come rounded to 2 decimals) are counted apart, not in the means.",
        "Scored: outputs whose every question was answered with probabilities (and, for "
        "digits and bits, with the label the output read); n/a: none was, or the options "
        "are not in interval order (bisection's cuts, adaptive thresholds' yes/no).",
    ]
    if log_scale:
        notes.append(
            f"CRPS log10(abs y): the CRPS of log10|y| in hundredths of a decade, shown because "
            f"the targets span {p.distributions.span_decades:.1f} decades (a point mass "
            "scores 100·|log10 ŷ − log10 y|, the LAR ×100 over ln 10). Each leaf's values "
            "are folded to |x| (a leaf across 0 cut there, its mass shared by width; a sign "
            "error is not seen on this scale), |x| floored at half a cell (ε/2), and its mass "
            "spread uniformly over log10 of its ends; overlapping parts add. The CRPS on y "
            "stays the headline: it is defined for every output, never dominated by values "
            "near 0 (where a log scale magnifies a one-cell error without bound, as in the "
            "−50 domain) and reduces to NMAE, the paper's own scale."
        )
    if p.distributions.not_scored:
        listed = ", ".join(decoder_label(d, suite) for d in p.distributions.not_scored)
        notes.append(
            f"No predicted distribution (n/a, not 0): {listed}: their outputs are neither "
            "interval paths, digit or bit chains, nor threshold CDFs (e.g. beams, sets, "
            "imported point predictions)."
        )
    title = f"Distributions: proper scores{suffix}"
    return Table(title, header, rows, tuple(notes), left=2)


def _coverage_table(p: ProbabilityStats, suite: str, suffix: str) -> Table:
    assert p.distributions is not None
    rows = []
    for r in p.distributions.rows:
        row = [decoder_label(r.decoder, suite), condition_label(r.condition)]
        for level in CENTRAL_LEVELS:
            row.append(_cell(r, f"cover{int(100 * level)}", 100.0, 1))
        for level in CENTRAL_LEVELS:
            row.append(_cell(r, f"is{int(100 * level)}"))
        rows.append(tuple(row))
    header = ["Decoder", "Condition"]
    header += [f"Cover {int(100 * a)}% (%)" for a in CENTRAL_LEVELS]
    header += [f"IS {int(100 * a)}%" for a in CENTRAL_LEVELS]
    notes = (
        "Cover a%: share of outputs whose central a% interval [F⁻¹((1−a)/2), F⁻¹((1+a)/2)] "
        "holds y (nominal: a). IS a%: the interval score, width + (2/(1−a))·distance of y "
        "outside it, in % of U−L (Gneiting & Raftery 2007).",
    )
    title = f"Distributions: coverage of central intervals{suffix}"
    return Table(title, tuple(header), tuple(rows), notes, left=2)


def _pit_table(p: ProbabilityStats, suite: str, suffix: str) -> Table:
    assert p.distributions is not None
    rows = tuple(
        (
            decoder_label(r.decoder, suite),
            condition_label(r.condition),
            *(fmt(100.0 * c / r.scored, 0) for c in r.pit_counts),
        )
        for r in p.distributions.rows
        if r.scored
    )
    header = ("Decoder", "Condition", *(f"{b / PIT_BINS:.1f}" for b in range(PIT_BINS)))
    notes = (
        f"% of outputs per PIT bin (F(y) in {PIT_BINS} equal-width bins, from the lower edge "
        "shown). Calibrated: about 10 in every bin; a peak in the middle: too wide; peaks at "
        "both ends: too narrow.",
        "No interval: a histogram of this run's outputs; the coverage table above carries "
        "the intervals on calibration.",
    )
    return Table(f"Distributions: PIT histogram{suffix}", header, rows, notes, left=2)


def _step_table(p: ProbabilityStats, suite: str, suffix: str) -> Table:
    assert p.distributions is not None
    rows = tuple(
        (
            decoder_label(s.decoder, suite),
            condition_label(s.condition),
            str(s.depth),
            f"{s.questions:,}",
            fmt(s.rps, 4),
            fmt(s.log_loss, 3),
            f"{s.zero_mass:,}",
        )
        for s in p.distributions.steps
    )
    header = ("Decoder", "Condition", "d", "Questions", "RPS", "Log loss", "p(true) = 0")
    notes = (
        "Per decision step, the questions answered with probabilities while an option held "
        "y: ranked probability score over the options in interval order, and −ln p(true) "
        "(mean over those with p(true) > 0; the others counted apart). Where in the tree "
        "the mass is lost. Index digits: d is the digit's position (1: the highest), while "
        "the digits read before it were y's; index bits: d = 1 for the heaviest bit, every "
        "bit (each has a true value).",
        "No interval: a diagnostic of where in the tree this run lost mass; the proper-score "
        "table carries the decoders' intervals.",
    )
    return Table(f"Distributions: per decision step{suffix}", header, rows, notes, left=2)


def distribution_tables(p: ProbabilityStats, suite: str, suffix: str) -> list[Table]:
    """The section's tables (none when no answer carried probabilities)."""
    if p.distributions is None or not p.distributions.rows:
        return []
    tables = [_score_table(p, suite, suffix), _coverage_table(p, suite, suffix)]
    tables.append(_pit_table(p, suite, suffix))
    if p.distributions.steps:
        tables.append(_step_table(p, suite, suffix))
    return tables


def distribution_section(p: ProbabilityStats | None, suite: str, suffix: str) -> list[str]:
    """The section as Markdown lines (empty without scored distributions)."""
    tables = [] if p is None else distribution_tables(p, suite, suffix)
    if not tables:
        return []
    lines = [f"## {SECTION_TITLE}", ""]
    for table in tables:
        lines += [table.to_markdown(), ""]
    return lines


def _number(value: float) -> float | None:
    return None if math.isnan(value) else float(value)


def distributions_to_dict(p: ProbabilityStats) -> dict[str, Any] | None:
    """The section's numbers for ``--json`` (CRPS and interval scores in % of U−L, coverage
    as a fraction, log scores in nats; NaN as null); None without probabilities."""
    d = p.distributions
    if d is None:
        return None
    return {
        "scored_at": "centre of y's cell",
        "families_resampled": d.n_families,
        "not_scored": list(d.not_scored),
        "crps_log10_unit": "decades (log10|y|; |y| floored at half a cell, signs folded)",
        "targets_span_decades": _number(d.span_decades),
        "log_scale_shown": d.log_scale,
        "rows": [
            {
                "decoder": r.decoder,
                "condition": r.condition,
                "n": r.n,
                "scored": r.scored,
                "true_leaf_zero_mass": r.zero_mass,
                **{s: _number(r.mean[s]) for s in SCORES},
                **{
                    f"{s}_interval": [_number(r.interval[s][0]), _number(r.interval[s][1])]
                    for s in SCORES
                },
                "pit_counts": list(r.pit_counts),
            }
            for r in d.rows
        ],
        "steps": [
            {
                "decoder": s.decoder,
                "condition": s.condition,
                "d": s.depth,
                "questions": s.questions,
                "rps": _number(s.rps),
                "log_loss": _number(s.log_loss),
                "p_true_zero": s.zero_mass,
            }
            for s in d.steps
        ],
    }
