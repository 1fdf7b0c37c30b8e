"""Every output with the rounds that produced it, streamed into compact columns for the job
viewer of the HTML report.

A 100× affine run has 614,400 outputs, 2.4 million questions and 19 million returned
probabilities in a 1.5 GB requests.jsonl. Nothing here holds a parsed line longer than it
takes to read it: strings are interned (criteria sets and question texts are shared by
thousands of jobs), numbers go into ``array`` columns, and probabilities into one uint16
array of fixed-point values (the four decimals the viewer shows), so memory grows with the
numbers kept, not with the log.
"""

from __future__ import annotations

import math
from array import array
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from analysis.errors import bad_output_line
from analysis.loading.cache.column_cache import RUN_LOGS, cache_key, cached
from analysis.loading.columns.exact import output_errors, parse_decimal
from analysis.loading.columns.interning import Interner, as_text
from analysis.loading.columns.row_chunks import release_freed
from runfolder import JsonlReader, stored

from .job_rounds import COLUMNS, NONE, JobRounds, QuestionSpec, quantised
from .targets import TargetRule, option_holding

__all__ = ["NONE", "Interner", "JobRounds", "QuestionSpec", "load_rounds"]

_BLOCK = 1 << 16  # probabilities quantised at a time
_KEPT = {"JobRounds": JobRounds, "QuestionSpec": QuestionSpec}  # what column_cache rebuilds


class _Reader:
    """State shared by the two streaming passes."""

    def __init__(self) -> None:
        self.s = Interner()
        self.s.code("")  # id 0: the empty string
        self.decoders: dict[str, int] = {}
        self.decoder_names: list[str] = []
        self.enums: dict[str, Interner] = {k: Interner() for k in ("domain", "cond", "order")}
        self.jobs: dict[str, int] = {}
        # Per decoder code, the output row of each job index (-1: none yet). A dict keyed by
        # (job, decoder) held ~55 MB of entries and int objects at 100× (614,400 outputs),
        # left behind in fragments when freed; these are 4 bytes per job and decoder.
        self.rows: list[array[int]] = []
        self.rules: dict[tuple[int, int], TargetRule] = {}  # (decoder, numbers id) -> rule
        self.targets: dict[tuple[int, int, str, int], str | None] = {}
        self.steps: dict[int, Any] = {}  # trace-step string id -> parsed step
        # (target, L, eps, N) as written, interned: thousands of distinct ones for 10^5 rows.
        self.number_ids: dict[tuple[Any, ...], int] = {}
        self.numbers: list[tuple[Any, ...]] = []
        self.out_numbers = array("I")  # output row -> id into self.numbers
        self.spec_ids: dict[bytes, int] = {}
        self.specs: list[QuestionSpec] = []
        self.spec_pos: list[dict[str, int]] = []
        self.ape_cache: dict[tuple[Any, ...], float] = {}
        self.cols: dict[str, array[Any]] = {name: array(code) for name, code in COLUMNS.items()}
        self.failed: dict[tuple[int, int], list[tuple[int, str, str]]] = {}
        # Probabilities as returned, read as float32 and quantised a block at a time.
        self.pending = array("f")

    # --- outputs.jsonl -------------------------------------------------------------------

    def _job(self, record: dict[str, Any]) -> int:
        job = str(record["job"])
        found = self.jobs.get(job)
        if found is not None:
            return found
        c = self.cols
        found = self.jobs[job] = len(c["job_id"])
        case = str(record.get("case", job))
        c["job_id"].append(self.s.code(job))
        c["job_case"].append(self.s.code(case))
        c["job_family"].append(self.s.code(str(record.get("family", case))))
        c["job_domain"].append(
            min(self.enums["domain"].code(str(record.get("domain", "all"))), 255)
        )
        c["job_condition"].append(min(self.enums["cond"].code(str(record["condition"])), 255))
        c["job_order"].append(min(self.enums["order"].code(str(record["order"])), 255))
        repeat = record.get("repeat")
        c["job_repeat"].append(repeat if isinstance(repeat, int) and 0 <= repeat < 65536 else 0)
        return found

    def _ape(self, numbers: int, value: Any, ok: bool) -> float:
        if not ok or value is None:
            return math.nan
        key = (numbers, value)
        found = self.ape_cache.get(key)
        if found is None:
            target, lower, eps, n_cells = self.numbers[numbers]
            found = output_errors(
                parse_decimal(target),
                parse_decimal(value),
                parse_decimal(lower),
                parse_decimal(eps),
                int(n_cells),
            )[0]
            if len(self.ape_cache) < 200_000:
                self.ape_cache[key] = found
        return found

    def output(self, record: dict[str, Any]) -> None:
        """Add (or, for a repeated (job, decoder), replace) one outputs.jsonl line."""
        job = self._job(record)
        decoder = str(record["decoder"])
        code = self.decoders.get(decoder)
        if code is None:
            if len(self.decoders) > 255:
                raise ValueError("more than 256 decoders")
            code = self.decoders[decoder] = len(self.decoder_names)
            self.decoder_names.append(decoder)
            self.rows.append(array("i"))
        ok = record.get("status") == "ok"
        trace = record.get("trace")
        steps = trace if isinstance(trace, list) else []
        c, s = self.cols, self.s.code
        cell = record.get("cell")
        numbers = (record["target"], record["L"], record["eps"], record["N"])
        nid = self.number_ids.get(numbers)  # TypeError on a list or object: a bad line
        if nid is None:
            nid = self.number_ids[numbers] = len(self.numbers)
            self.numbers.append(numbers)
        values = {
            "out_job": job,
            "out_decoder": code,
            "out_ok": 1 if ok else 0,
            "out_target": s(as_text(record["target"])),
            "out_value": NONE if record.get("value") is None else s(as_text(record["value"])),
            "out_cell": s(f"[{cell[0]}, {cell[1]})")
            if isinstance(cell, list) and len(cell) == 2
            else NONE,
            "out_grid": s(f"L {record['L']} · eps {record['eps']} · N {record['N']}"),
            "out_ape": self._ape(nid, record.get("value"), ok),
            "out_rounds": record["rounds"] if isinstance(record.get("rounds"), int) else -1,
            "out_trace_start": len(c["trace_step"]),
            "out_trace_len": min(len(steps), 65535),
        }
        for step in steps[:65535]:
            c["trace_step"].append(s(as_text(step)))
        rows = self.rows[code]
        if len(rows) <= job:
            rows.extend([-1] * (job + 1 - len(rows)))
        row = rows[job]
        if row < 0:
            row = rows[job] = len(c["out_job"])
            for name, value in values.items():
                c[name].append(value)
            self.out_numbers.append(nid)
        else:  # a duplicate line: the last write wins
            for name, value in values.items():
                c[name][row] = value
            self.out_numbers[row] = nid

    # --- requests.jsonl ------------------------------------------------------------------

    def _spec(self, question: dict[str, Any]) -> int:
        raw = orjson.dumps(question)
        found = self.spec_ids.get(raw)
        if found is None:
            criteria = question.get("criteria")
            pairs = list(criteria.items()) if isinstance(criteria, dict) else []
            spec = QuestionSpec(
                str(question.get("type", "")),
                str(question.get("instructions", "")),
                tuple(str(k) for k, _ in pairs),
                tuple(as_text(v) for _, v in pairs),
            )
            found = self.spec_ids[raw] = len(self.specs)
            self.specs.append(spec)
            self.spec_pos.append({label: i for i, label in enumerate(spec.labels)})
        return found

    def _target(self, row: int, code: int, step: str, round_: int, spec: int) -> str | None:
        """The target's label for this question; cached, since paths repeat across jobs."""
        c = self.cols
        start, count = c["out_trace_start"][row], c["out_trace_len"][row]
        trace_id = NONE
        for i in range(start, start + count):
            sid = c["trace_step"][i]
            parsed = self.steps.get(sid)
            if parsed is None:
                parsed = self.steps[sid] = orjson.loads(self.s.strings[sid])
            if isinstance(parsed, dict) and parsed.get("round") == round_:
                trace_id = sid
                break
        nid = self.out_numbers[row]
        key = (code, nid, step, trace_id)
        if key in self.targets:
            return self.targets[key]
        rule = self.rules.get((code, nid))
        if rule is None:
            fields = dict(zip(("target", "L", "eps", "N"), self.numbers[nid], strict=True))
            rule = self.rules[code, nid] = TargetRule(
                {"decoder": self.decoder_names[code], **fields}
            )
        if rule.has_rule:
            label = rule.label(step, None if trace_id == NONE else self.steps[trace_id])
        else:  # no rule of its own: read the options' texts (cached per question as sent)
            key = (code, nid, "", spec)
            if key in self.targets:
                return self.targets[key]
            spec_ = self.specs[spec]
            at = None if rule.target is None else option_holding(rule.target, spec_.texts)
            label = None if at is None else spec_.labels[at]
        if len(self.targets) < 500_000:
            self.targets[key] = label
        return label

    def request(self, record: dict[str, Any]) -> None:
        """Add the questions of one answered requests.jsonl line (or note a failed one)."""
        job = self.jobs.get(str(record.get("job")))
        if job is None:
            return  # a job with no output yet (pending): nothing to show it under
        round_ = record.get("round")
        round_ = round_ if isinstance(round_, int) and 0 <= round_ < 65536 else 0
        attempt = record.get("attempt")
        attempt = attempt if isinstance(attempt, int) and 0 <= attempt < 256 else 0
        error = record.get("error")
        if error is not None:
            kind = error.get("kind", "unknown") if isinstance(error, dict) else "unknown"
            message = error.get("message", "") if isinstance(error, dict) else str(error)
            self.failed.setdefault((job, round_), []).append(
                (attempt, str(kind), str(message)[:300])
            )
            return
        request, response, qmap = record.get("request"), record.get("response"), record.get("qmap")
        if not isinstance(request, dict) or not isinstance(qmap, dict):
            return
        questions = request.get("questions")
        answers = response.get("answers") if isinstance(response, dict) else None
        if not isinstance(questions, dict):
            return
        answers = answers if isinstance(answers, dict) else {}
        state = self.s.code(as_text(request.get("state", "")))
        c, s = self.cols, self.s.code
        probabilities = self.pending
        for qid, meaning in qmap.items():
            decoder, _, step = str(meaning).partition("/")
            code = self.decoders.get(decoder)
            rows = None if code is None else self.rows[code]
            row = rows[job] if rows is not None and job < len(rows) else -1
            question = questions.get(qid)
            if code is None or row < 0 or not isinstance(question, dict):
                continue
            spec = self._spec(question)
            labels, positions = self.specs[spec].labels, self.spec_pos[spec]
            answer = answers.get(qid)
            answer = answer if isinstance(answer, dict) else {}
            choice = positions.get(str(answer.get("choice")), -1)
            probs = answer.get("probabilities")
            if isinstance(probs, dict) and list(probs) == list(labels):
                values = list(probs.values())  # the common case: returned in the order sent
            elif isinstance(probs, dict):
                values = [probs.get(label) for label in labels]
            else:
                values = [None] * len(labels)
            try:
                probabilities.extend(values)
            except TypeError:
                probabilities.extend(
                    float(v) if isinstance(v, int | float) and not isinstance(v, bool) else math.nan
                    for v in values
                )
            target = self._target(row, code, step, round_, spec)
            c["q_output"].append(row)
            c["q_round"].append(round_)
            c["q_step"].append(s(step))
            c["q_spec"].append(spec)
            c["q_state"].append(state)
            c["q_choice"].append(choice)
            c["q_target"].append(positions.get(target, -1) if target is not None else -1)
            c["q_attempt"].append(attempt)
        if len(probabilities) >= _BLOCK:
            self.flush()

    def flush(self) -> None:
        """Quantise the probabilities read so far into the uint16 column."""
        probabilities = np.frombuffer(self.pending, np.float32)
        self.cols["probabilities"].frombytes(quantised(probabilities).tobytes())
        self.pending = array("f")


def load_rounds(run_dir: Path) -> JobRounds:
    """Stream outputs.jsonl, then requests.jsonl, of ``run_dir`` into :class:`JobRounds`,
    or read them back from ``RUN/.columns/`` while the logs are unchanged (``column_cache``)."""
    key = cache_key(run_dir, RUN_LOGS, reader="rounds")
    return cached(run_dir, "rounds", key, _KEPT, lambda: _read_rounds(run_dir))


def _read_rounds(run_dir: Path) -> JobRounds:
    reader = _Reader()
    outputs = run_dir / "outputs.jsonl"
    if stored(outputs).is_file():
        for lineno, record in JsonlReader[dict[str, Any]](outputs).numbered():
            try:
                reader.output(record)
            except (KeyError, ValueError, TypeError) as exc:
                raise bad_output_line(outputs, lineno, exc) from exc
    requests = run_dir / "requests.jsonl"
    if stored(requests).is_file():
        for record in JsonlReader[dict[str, Any]](requests):
            reader.request(record)
    reader.flush()
    rounds = JobRounds(
        strings=reader.s.strings,
        decoders=list(reader.decoders),
        domains=reader.enums["domain"].strings,
        conditions=reader.enums["cond"].strings,
        orders=reader.enums["order"].strings,
        specs=reader.specs,
        failed_attempts=reader.failed,
        requests_present=stored(requests).is_file(),
        **reader.cols,
    )
    # The reader's dictionaries and caches go now: their pages back to the system, so that
    # what comes next (keeping, packing) is not laid on top of them.
    del reader
    release_freed()
    return rounds
