"""The historical suites' own computation: per date and per condition, the range and
summary of absolute percentage errors (paper, Table "Historical index readout")."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from analysis.loading.logs.outputs import Outputs

from .design import Design

__all__ = ["ApeSummary", "HistoryDate", "HistoryReadout", "history_readouts"]


@dataclass(frozen=True)
class ApeSummary:
    """APE (%) over the ok outputs of one condition (one date, or all dates); NaN if none."""

    n: int  # ok outputs with a defined APE
    n_failed: int
    min: float
    max: float
    mean: float
    median: float
    above: int  # ok outputs whose value is above the reference (the paper notes direction)


@dataclass(frozen=True)
class HistoryDate:
    """One date's reference close and its APE summary per condition."""

    date: str
    reference: str
    conditions: tuple[ApeSummary, ...]  # in HistoryReadout.conditions order


@dataclass(frozen=True)
class HistoryReadout:
    """The table of one decoder: a row per date and the summary over all its outputs."""

    decoder: str
    conditions: tuple[str, ...]
    dates: tuple[HistoryDate, ...]
    overall: tuple[ApeSummary, ...]


def _summary(outputs: Outputs, rows: np.ndarray) -> ApeSummary:
    ok = rows[outputs.ok[rows]]
    ape = outputs.ape[ok]
    defined = np.isfinite(ape)  # APE is undefined at a zero target (never a close)
    ape, ok = ape[defined], ok[defined]
    n_failed = int(len(rows) - np.count_nonzero(outputs.ok[rows]))
    if not len(ape):
        return ApeSummary(0, n_failed, math.nan, math.nan, math.nan, math.nan, 0)
    return ApeSummary(
        n=len(ape),
        n_failed=n_failed,
        min=float(ape.min()),
        max=float(ape.max()),
        mean=float(ape.mean()),
        median=float(np.median(ape)),
        above=int(np.count_nonzero(outputs.value[ok] > outputs.target[ok])),
    )


def history_readouts(outputs: Outputs, design: Design) -> tuple[HistoryReadout, ...]:
    """One readout per decoder with outputs; dates are the run's domains.

    Every output is one unit (dates × conditions × orders × repeats); repeats are never
    collapsed. Dates sort by name, which for ISO dates is chronological.
    """
    readouts = []
    targets = outputs.target_text  # built from codes on each access: once
    for decoder in design.decoders:
        if decoder not in outputs.decoder_names:
            continue
        mine = outputs.decoder == outputs.decoder_names.index(decoder)
        by_condition = [
            mine & (outputs.condition == outputs.condition_names.index(c))
            if c in outputs.condition_names
            else np.zeros_like(mine)
            for c in design.conditions
        ]
        dates = []
        for date in sorted(outputs.domain_names):
            on_date = outputs.domain == outputs.domain_names.index(date)
            rows = np.flatnonzero(mine & on_date)
            if not len(rows):
                continue
            # One close per date; should a log ever disagree, show every value, not one.
            references = dict.fromkeys(targets[i] for i in rows.tolist())
            summaries = tuple(_summary(outputs, np.flatnonzero(m & on_date)) for m in by_condition)
            dates.append(HistoryDate(date, " / ".join(references), summaries))
        overall = tuple(_summary(outputs, np.flatnonzero(m)) for m in by_condition)
        readouts.append(HistoryReadout(decoder, design.conditions, tuple(dates), overall))
    return tuple(readouts)
