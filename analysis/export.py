"""``numericjev export RUN``: a run's logs as tables for DuckDB, pandas, polars or a spreadsheet.

Three tables, each one file (``exchanges``, ``outputs``, ``answers``; Parquet through pyarrow,
or CSV), read through the same readers as ``analyze`` (plain or compressed logs, torn tails
and repeated lines handled alike), so their row counts are the run's:

- ``exchanges``: one row per ``requests.jsonl`` line (every attempt, failed ones included);
- ``outputs``: one row per (job, decoder), the last line written winning, as every table of
  ``analyze`` counts them, with the errors computed exactly as there (``ape``, ``nae``);
- ``answers``: one row per question answered in an exchange: what was chosen, and with what
  probability.

The columns are listed in ``COLUMNS`` (and in ``docs/analysis.md``, "Export").
"""

from __future__ import annotations

import csv
import math
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from runfolder import JsonlReader, RequestLine, load_manifest, scan_logs, verify

from .errors import AnalysisError
from .loading.logs.outputs import Outputs, load_outputs
from .loading.probabilities.answers import AnswerLog, load_answers, order_pair
from .statistics.facts import log_repairs
from .statistics.output_scores import score_columns, scored_outputs, scored_rows

__all__ = ["COLUMNS", "FORMATS", "export_run"]

FORMATS = ("parquet", "csv")

# Column types (Parquet); every column not named here is text.
_INTEGER = {"seq", "round", "attempt", "http_status", "questions", "input_tokens", "output_tokens",
            "repeat", "rounds", "n_cells", "options"}  # fmt: skip
_FLOAT = {"t", "latency_ms", "cost_usd", "target_f", "value_f", "ape", "nae", "within5",
          "p_choice", "crps", "crps_log10", "logscore", "logscore_leaf", "pit", "covered_50", "covered_80",
          "covered_90", "interval_score_50", "interval_score_80", "interval_score_90"}  # fmt: skip
_BOOLEAN = {"cache_hit"}

COLUMNS: dict[str, dict[str, str]] = {
    "exchanges": {
        "seq": "the record's number in the run (shared with outputs.jsonl)",
        "job": "job id (case · condition · order · repeat)",
        "round": "the job's round (1-based)",
        "attempt": "attempt of this exchange (1-based)",
        "t": "when the request started, epoch seconds",
        "latency_ms": "time to the reply (null: none)",
        "http_status": "HTTP status (200 for in-process models; null: no response)",
        "error_kind": "the log kind of a failed attempt (null: answered)",
        "model": "the model the server says answered",
        "questions": "questions in the request",
        "input_tokens": "tokens billed in",
        "output_tokens": "tokens billed out",
        "cost_usd": "cost recorded (null: unknown)",
        "cache_hit": "answered from the request cache",
        "request_id": "the server's request id",
    },
    "outputs": {
        "job": "job id",
        "case": "case id",
        "family": "family (the unit of the bootstrap)",
        "domain": "affine domain (or 'all')",
        "condition": "arithmetic or provided",
        "order": "option order",
        "repeat": "repeat number",
        "decoder": "decoder name",
        "status": "ok or failed",
        "target": "exact target, decimal text",
        "value": "the decoded value, decimal text (null: failed)",
        "target_f": "target as float64",
        "value_f": "value as float64 (NaN: failed)",
        "ape": "absolute percentage error, %, computed exactly (NaN: failed)",
        "nae": "100 |value - target| / (U - L), computed exactly (NaN: failed)",
        "within5": "1 when ape <= 5, 0 when not (NaN: failed)",
        "rounds": "rounds the decoder took (-1: not recorded)",
        "n_cells": "cells of the grid (N)",
        # The predicted distribution's scores (analyze's Distributions section); null: n/a
        # (no whole distribution answered with probabilities, or not a decoder that has one).
        "crps": "CRPS of the predicted distribution, % of U - L (null: n/a)",
        "crps_log10": "CRPS of log10|y|, decades (|y| floored at half a cell; signs folded)",
        "logscore": "density log score -ln(m N / w) of the leaf holding y, nats (inf: mass 0)",
        "logscore_leaf": "log score -ln m of the leaf holding y, nats (inf: mass 0)",
        "pit": "F(y), y at its cell's centre",
        "covered_50": "1 when the central 50% interval holds y, else 0",
        "covered_80": "1 when the central 80% interval holds y, else 0",
        "covered_90": "1 when the central 90% interval holds y, else 0",
        "interval_score_50": "interval score of the central 50% interval, % of U - L",
        "interval_score_80": "interval score of the central 80% interval, % of U - L",
        "interval_score_90": "interval score of the central 90% interval, % of U - L",
    },
    "answers": {
        "seq": "the exchange's record number",
        "job": "job id",
        "round": "the job's round",
        "attempt": "attempt of the exchange",
        "question": "question id in the request (q1, q2, ...)",
        "decoder": "decoder that asked it",
        "step": "the decoder's step (tree level, digit, bit)",
        "choice": "label chosen",
        "p_choice": "probability the model gave the chosen label (NaN: none given)",
        "options": "options offered",
    },
}


def _exchange_rows(
    reader: JsonlReader[RequestLine],
) -> Iterator[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """Each exchange's row, with its answers' rows (one pass over ``requests.jsonl``)."""
    for line in reader:
        usage = line.get("usage") or {}
        error = line.get("error")
        cache = line.get("cache")
        request = line.get("request") or {}
        questions = request.get("questions") or {}
        row = {
            "seq": line.get("seq"),
            "job": line.get("job"),
            "round": line.get("round"),
            "attempt": line.get("attempt"),
            "t": line.get("t"),
            "latency_ms": line.get("latency_ms"),
            "http_status": line.get("status"),
            "error_kind": error.get("kind") if isinstance(error, Mapping) else None,
            "model": line.get("model"),
            "questions": len(questions),
            "input_tokens": usage.get("input_tokens"),
            "output_tokens": usage.get("output_tokens"),
            "cost_usd": line.get("cost_usd"),
            "cache_hit": isinstance(cache, Mapping) and cache.get("hit") is True,
            "request_id": line.get("request_id"),
        }
        answers: list[dict[str, Any]] = []
        response = line.get("response")
        given = response.get("answers") if isinstance(response, Mapping) and not error else None
        if isinstance(given, Mapping):
            qmap = line.get("qmap") or {}
            for qid, answer in given.items():
                if not isinstance(answer, Mapping):
                    continue
                decoder, _, step = str(qmap.get(qid, "")).partition("/")
                choice = answer.get("choice")
                probabilities = answer.get("probabilities")
                p = probabilities.get(choice) if isinstance(probabilities, Mapping) else None
                criteria = (questions.get(qid) or {}).get("criteria") or {}
                answers.append(
                    {
                        "seq": row["seq"],
                        "job": row["job"],
                        "round": row["round"],
                        "attempt": row["attempt"],
                        "question": qid,
                        "decoder": decoder,
                        "step": step,
                        "choice": None if choice is None else str(choice),
                        "p_choice": float(p) if isinstance(p, int | float) else math.nan,
                        "options": len(criteria),
                    }
                )
        yield row, answers


# Export column -> output_scores' score.
_SCORES = {
    "crps": "crps",
    "crps_log10": "crps_log10",
    "logscore": "log_density",
    "logscore_leaf": "log_score",
    "pit": "pit",
    "covered_50": "cover50",
    "covered_80": "cover80",
    "covered_90": "cover90",
    "interval_score_50": "is50",
    "interval_score_80": "is80",
    "interval_score_90": "is90",
}


def _score_columns(o: Outputs, answers: AnswerLog) -> dict[str, list[Any]]:
    """Each output's predicted-distribution scores; None (null) where n/a, +inf for a log
    score whose true leaf had mass 0 (the section counts those apart)."""
    found = scored_outputs(answers)
    values = score_columns(o, found, answers, tuple(_SCORES.values()))
    scored = scored_rows(o, found, answers)
    columns = {}
    for i, name in enumerate(_SCORES):
        column = values[i]
        if name.startswith("logscore"):
            column = np.where(scored & np.isnan(column), np.inf, column)
        columns[name] = [None if not s else float(v) for s, v in zip(scored, column, strict=True)]
    return columns


def _output_columns(o: Outputs) -> dict[str, list[Any]]:
    """The outputs table from the analysis' own columns (last line wins, exact errors)."""

    def named(codes: np.ndarray, names: tuple[str, ...]) -> list[str]:
        return [names[int(c)] for c in codes]

    return {
        "job": list(o.job),
        "case": named(o.case, o.case_names),
        "family": named(o.family, o.family_names),
        "domain": named(o.domain, o.domain_names),
        "condition": named(o.condition, o.condition_names),
        "order": named(o.order, o.order_names),
        "repeat": o.repeat.tolist(),
        "decoder": named(o.decoder, o.decoder_names),
        "status": ["ok" if ok else "failed" for ok in o.ok],
        "target": list(o.target_text),
        "value": list(o.value_text),
        "target_f": o.target.tolist(),
        "value_f": o.value.tolist(),
        "ape": o.ape.tolist(),
        "nae": o.nae.tolist(),
        "within5": o.within5.tolist(),
        "rounds": o.rounds.tolist(),
        "n_cells": o.n_cells.tolist(),
    }


def _arrow_type(pa: Any, name: str) -> Any:
    if name in _INTEGER:
        return pa.int64()
    if name in _FLOAT:
        return pa.float64()
    return pa.bool_() if name in _BOOLEAN else pa.string()


class _Table:
    """One table's file, written in batches of ``BATCH`` rows (memory stays bounded)."""

    BATCH = 65_536

    def __init__(self, path: Path, fmt: str, names: list[str]) -> None:
        self.path, self.fmt, self.names = path, fmt, names
        self.rows = 0
        self._columns: dict[str, list[Any]] = {name: [] for name in names}
        self._writer: Any = None
        self._handle: Any = None

    def add(self, row: Mapping[str, Any]) -> None:
        """Append one row (its keys are the table's columns)."""
        for name in self.names:
            self._columns[name].append(row[name])
        if len(self._columns[self.names[0]]) >= self.BATCH:
            self._flush()

    def add_columns(self, columns: Mapping[str, list[Any]]) -> None:
        """Append whole columns at once."""
        for name in self.names:
            self._columns[name].extend(columns[name])
        self._flush()

    def _flush(self) -> None:
        count = len(self._columns[self.names[0]])
        if self.fmt == "csv":
            if self._handle is None:
                self._handle = self.path.open("w", newline="", encoding="utf-8")
                self._writer = csv.writer(self._handle)
                self._writer.writerow(self.names)
            self._writer.writerows(zip(*self._columns.values(), strict=True))
        elif count or self._writer is None:
            import pyarrow as pa
            import pyarrow.parquet as pq

            schema = pa.schema([(name, _arrow_type(pa, name)) for name in self.names])
            if self._writer is None:
                self._writer = pq.ParquetWriter(self.path, schema, compression="zstd")
            if count:
                self._writer.write_table(pa.table(self._columns, schema=schema))
        self.rows += count
        self._columns = {name: [] for name in self.names}

    def close(self) -> None:
        """Write what is left and close the file."""
        self._flush()
        if self.fmt == "csv":
            self._handle.close()
        else:
            self._writer.close()


def export_run(
    folder: Path, out_dir: Path, fmt: str = "parquet"
) -> tuple[dict[str, tuple[Path, int]], str | None]:
    """Write the three tables of ``folder`` into ``out_dir``; each table's file and rows,
    and what reading the logs repaired (``log_repairs``)."""
    if fmt not in FORMATS:
        raise AnalysisError(f"--format must be one of {', '.join(FORMATS)}; got {fmt!r}")
    if fmt == "parquet":
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise AnalysisError(
                "Parquet needs pyarrow, the export extra: in the project's folder run "
                ".venv/bin/pip install -e '.[export]' (or use --format csv)"
            ) from None
    if not (folder / "manifest.json").is_file():
        raise AnalysisError(f"{folder} holds no run (no manifest.json); pass a run folder")
    # Before anything is written: a line of another run, or a cut log, is refused by every
    # reader (runfolder.integrity), and the tables below stream the logs unchecked.
    scan_logs(folder, load_manifest(folder, partial=True).run_id, legacy=True)
    out_dir.mkdir(parents=True, exist_ok=True)
    tables = {name: _Table(out_dir / f"{name}.{fmt}", fmt, list(COLUMNS[name])) for name in COLUMNS}
    requests = JsonlReader[RequestLine](folder / "requests.jsonl")
    for row, rows in _exchange_rows(requests):
        tables["exchanges"].add(row)
        for answer in rows:
            tables["answers"].add(answer)
    outputs = load_outputs(folder / "outputs.jsonl")
    answers = load_answers(folder, order_pair(load_manifest(folder, partial=True).orders))
    tables["outputs"].add_columns(_output_columns(outputs) | _score_columns(outputs, answers))
    for table in tables.values():
        table.close()
    repairs = log_repairs(
        outputs.stats.duplicates,
        requests.duplicates,
        outputs.stats.torn_last_line + requests.torn,
    )
    return {name: (table.path, table.rows) for name, table in tables.items()}, repairs


def add_export_parser(sub: Any, epilog: str) -> None:
    """The ``export`` subcommand's parser (``analysis.cli``)."""
    p = sub.add_parser(
        "export",
        help="write a run's exchanges, outputs and answers as Parquet or CSV tables",
        description=(
            "Write RUN's logs as three tables: exchanges.EXT (one row per requests.jsonl "
            "line), outputs.EXT (one row per job and decoder, the last line winning, with "
            "APE and NAE computed as analyze does) and answers.EXT (one row per question "
            "answered). Columns: docs/analysis.md, 'Export'. Parquet needs pyarrow "
            "(the export extra: .venv/bin/pip install -e '.[export]' in the project's folder)."
        ),
        epilog=epilog,
    )
    p.add_argument("run", metavar="RUN", help="the run folder, or latest (the run started last)")
    p.add_argument("--format", choices=FORMATS, default="parquet", help="default parquet")
    p.add_argument("--out", metavar="DIR", help="output folder (default RUN/export)")


def export_command(folder: Path, out: str | None, fmt: str) -> int:
    """``numericjev export``: write the tables and say where, with their row counts."""
    written, repairs = export_run(folder, Path(out) if out else folder / "export", fmt)
    for finding in verify(folder):
        print(f"numericjev export: warning: {finding.message}", file=sys.stderr)
    if repairs:  # as analyze, report and diff say it
        print(f"numericjev export: warning: log repairs: {repairs}", file=sys.stderr)
    for name, (path, rows) in written.items():
        print(f"{name}: {rows:,} rows -> {path}")
    return 0
