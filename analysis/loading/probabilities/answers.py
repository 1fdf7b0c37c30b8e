"""The returned probabilities of every interval question, joined with its output's path.

Behind the Probabilities section: each line of ``requests.jsonl`` is reduced to a few ints
per question as it streams past (``asked.py``, in the side-by-side worker or in chunks
here), so a 1.5 GB log is never held in memory; the join then runs in NumPy a chunk at a
time. It runs through ``qmap``: question id -> ``decoder/<round>``, and (job, decoder) ->
the unit read from outputs.jsonl (``interval_paths.py``); the round picks the step of its
trace, and each distinct (answer, question, step) is evaluated once (``outcome_table.py``).

Probabilities are read as the server sent them (Jev rounds them to 2 decimals, so they may
not sum to 1): a label missing from ``probabilities`` gets 0, a value that is not a number
counts as 0, and the vector over the question's criteria labels is renormalised to sum 1.
An answer whose label is not the one its trace recorded is not used (and counted).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from analysis.loading.columns.compact import narrow, narrow_type
from analysis.loading.columns.interning import NameCodes
from analysis.loading.columns.row_chunks import joined, release_freed
from runfolder import JsonlReader, RequestLine, stored

from .answer_log import AnswerCounts, AnswerLog
from .answer_outcomes import MISMATCH, UNUSABLE, UNUSABLE_LABELLED, WITH, WITHOUT
from .answer_pairs import LabelSets, PairScorer
from .asked import AskedChunk, AskedReader
from .chain_units import CHAIN_DECODERS, ChainAnswers, chain_step
from .interval_paths import PathTable, read_paths
from .option_order import option_vectors, tree_paths
from .outcome_table import OutcomeTable

__all__ = ["AnswerCounts", "AnswerLog", "AnswersJoin", "load_answers", "order_pair"]


class AnswersJoin:
    """Question rows (``asked.AskedChunk``) in, one chunk at a time; the join in NumPy.

    Every rule that depends on the log's order gives what a question-by-question reading
    gives: the first usable answer per (unit, step) counts and later ones are duplicates
    (depths past 63 never are); label sets are numbered as first met past those checks;
    the first of identical questions in one request is flagged; order pairs are matched
    by arrival (``answer_pairs.PairScorer``).
    """

    def __init__(self, paths: PathTable) -> None:
        self.paths = paths
        self.outcomes = OutcomeTable(paths.names["choice"])
        self.sets = LabelSets()
        # Rows at a shared step; pair ids are below the shared steps' count.
        self.pairs = PairScorer(self.sets, self.outcomes, len(paths.pair_first))
        self.set_of = np.empty(0, np.int64)  # label tuple id -> label set id (-1: not yet)
        # One flag per step: answered already (a repeat is a duplicate).
        self.seen = np.zeros(len(paths.step["choice"]), bool)
        self.tally = dict.fromkeys(
            ("answered", "with", "without", "unusable", "mismatch", "duplicates", "off"), 0
        )
        self.raw_min, self.raw_max = math.inf, -math.inf
        self.found: dict[str, list[np.ndarray]] = {n: [] for n in ("unit", "depth", "first", "o")}
        decoders = paths.codes["decoder"]
        self.n_decoders = len(decoders)
        self.target_code = np.empty(0, np.int64)  # qmap value id -> decoder code, or -1
        self.target_depth = np.empty(0, np.int64)
        # qmap value id -> a chain decoder's code (-1: none) and its position there
        self.chain_code = np.empty(0, np.int64)
        self.chain_position = np.empty(0, np.int64)
        self.chains = ChainAnswers(paths.chains)
        self.job_code = np.empty(0, np.int64)  # a chunk's job name id -> code, or -1

    def reader(self) -> AskedReader:
        """A reader of requests.jsonl lines that hands its rows straight to this join."""
        jobs = self.paths.codes["job"]
        if isinstance(jobs, NameCodes):  # looked up a chunk at a time
            return AskedReader(self.add, resolve=jobs.names.codes_of)
        return AskedReader(self.add, job_codes=jobs)

    def add(self, chunk: AskedChunk) -> None:
        """Join one chunk of question rows (in log order, whole requests)."""
        paths = self.paths
        self._grow(chunk)
        jobs = chunk.job if chunk.jobs is None else self.job_code[chunk.job]
        self._chains(chunk, jobs)
        code, depth = self.target_code[chunk.target], self.target_depth[chunk.target]
        rows = np.flatnonzero((code >= 0) & (jobs >= 0))
        unit = paths.unit_at[jobs[rows].astype(np.int64) * self.n_decoders + code[rows]]
        depth = depth[rows]
        on_path = unit >= 0
        on_path[on_path] = depth[on_path] <= paths.unit["step_count"][unit[on_path]]
        rows, unit, depth = rows[on_path], unit[on_path], depth[on_path]
        step = paths.unit["step_start"][unit] + depth - 1
        asked = {name: paths.step[name][step] for name in ("choice", "k", "truth", "form")}
        o = self.outcomes.ids_of(chunk.answer[rows], chunk.question[rows], asked, chunk)
        kind = self.outcomes.take("kind", o)
        used = kind != MISMATCH
        self.tally["mismatch"] += len(kind) - int(np.count_nonzero(used))
        rows, unit, depth, step, o, kind = (c[used] for c in (rows, unit, depth, step, o, kind))
        fresh = self._first_answers(depth, step)
        self.tally["duplicates"] += len(fresh) - int(np.count_nonzero(fresh))
        rows, unit, depth, step, o, kind = (c[fresh] for c in (rows, unit, depth, step, o, kind))
        self.tally["answered"] += len(kind)
        self.tally["without"] += int(np.count_nonzero(kind == WITHOUT))
        self.tally["unusable"] += int(
            np.count_nonzero((kind == UNUSABLE) | (kind == UNUSABLE_LABELLED))
        )
        label_set = self._label_sets(self.outcomes.take("labels", o))
        usable = kind == WITH
        rows, unit, depth, step, o = (c[usable] for c in (rows, unit, depth, step, o))
        label_set = label_set[usable]
        total = self.outcomes.take("total", o)
        self.tally["with"] += len(o)
        if len(o):
            self.raw_min = min(self.raw_min, float(total.min()))
            self.raw_max = max(self.raw_max, float(total.max()))
        self.tally["off"] += int(np.count_nonzero(np.abs(total - 1.0) > 0.01 + 1e-9))
        found = self.found
        found["unit"].append(unit.astype(np.int32))
        found["depth"].append(narrow(depth))
        found["first"].append(_first_of(chunk.line[rows], self.outcomes.take("key", o)))
        found["o"].append(narrow(o))
        slot = paths.step["pair"][step]
        shared = slot >= 0
        self.pairs.add_many(slot[shared], label_set[shared], o[shared])

    def _grow(self, chunk: AskedChunk) -> None:
        """Codes for the qmap values (and job names) the chunk's tables added."""
        known = len(self.target_code)
        if len(chunk.targets) > known:
            found = [self._target(where) for where in chunk.targets[known:]]
            self.target_code = np.r_[self.target_code, [c for c, _ in found]].astype(np.int64)
            self.target_depth = np.r_[self.target_depth, [d for _, d in found]].astype(np.int64)
            chained = [self._chain_target(where) for where in chunk.targets[known:]]
            self.chain_code = np.r_[self.chain_code, [c for c, _ in chained]].astype(np.int64)
            self.chain_position = np.r_[self.chain_position, [p for _, p in chained]].astype(
                np.int64
            )
        if chunk.jobs is not None and len(chunk.jobs) > len(self.job_code):
            codes, names = self.paths.codes["job"], chunk.jobs[len(self.job_code) :]
            if isinstance(codes, NameCodes):
                more = codes.names.codes_of(names).tolist()
            else:
                more = [codes.get(name, -1) for name in names]
            self.job_code = np.r_[self.job_code, more].astype(np.int64)

    def _target(self, where: str) -> tuple[int, int]:
        """A qmap value ``decoder/<round>`` as (decoder code, depth); (-1, 0) if not a unit's."""
        decoder, _, key = where.partition("/")
        code = self.paths.codes["decoder"].get(decoder)
        if code is None or not key.isdigit() or int(key) < 1:
            return -1, 0
        return code, int(key)

    def _chain_target(self, where: str) -> tuple[int, int]:
        """A qmap value ``decoder/<step>`` of a chain decoder (``chain_units``) as (decoder
        code, position); (-1, -1) if not one."""
        decoder, _, key = where.partition("/")
        kind = CHAIN_DECODERS.get(decoder)
        code = self.paths.codes["decoder"].get(decoder)
        if kind is None or code is None:
            return -1, -1
        position = chain_step(kind, key)
        return (code, position) if position >= 0 else (-1, -1)

    def _chains(self, chunk: AskedChunk, jobs: np.ndarray) -> None:
        """Hand the chunk's answers to chain questions on (``chain_units.ChainAnswers``)."""
        code = self.chain_code[chunk.target]
        rows = np.flatnonzero((code >= 0) & (jobs >= 0))
        if len(rows):
            self.chains.add(
                jobs[rows],
                code[rows],
                self.chain_position[chunk.target[rows]],
                chunk.answer[rows],
                chunk.answer_bytes,
                chunk.fresh_from,
            )

    def _first_answers(self, depth: np.ndarray, step: np.ndarray) -> np.ndarray:
        """True on each row that is the first answer to its step (rows deeper than 63 are
        never counted as repeats, as the 64-bit mask that once tracked them could not)."""
        fresh = np.ones(len(step), bool)
        checked = np.flatnonzero(depth < 64)
        at = step[checked]
        _, first = np.unique(at, return_index=True)
        again = np.ones(len(at), bool)
        again[first] = False
        again |= self.seen[at]
        fresh[checked[again]] = False
        self.seen[at] = True
        return fresh

    def _label_sets(self, labels: np.ndarray) -> np.ndarray:
        """The label set id of each row's labels (-1: none), registering new ones in the
        order the rows first meet them."""
        table = self.outcomes.labels
        if len(table) > len(self.set_of):
            grown = np.full(len(table), -1, np.int64)
            grown[: len(self.set_of)] = self.set_of
            self.set_of = grown
        has = labels >= 0
        ids, first = np.unique(labels[has], return_index=True)
        fresh = self.set_of[ids] < 0
        for label in ids[fresh][np.argsort(first[fresh], kind="stable")].tolist():
            self.set_of[label] = self.sets.get(table[label])[0]
        found = np.full(len(labels), -1, np.int64)
        found[has] = self.set_of[labels[has]]
        return found

    def result(self, requests_present: bool) -> AnswerLog:
        """The columns as numpy arrays. Once: the join is spent (its paths dropped)."""
        t = self.tally
        pairs = self.pairs.result()
        counts = AnswerCounts(
            requests_present=requests_present,
            answered=t["answered"],
            with_probabilities=t["with"],
            without_probabilities=t["without"],
            unusable=t["unusable"],
            choice_mismatch=t["mismatch"],
            duplicates=t["duplicates"],
            off_by_more_than_001=t["off"],
            pairs_without_truth=pairs.without_truth,
            raw_sum_min=self.raw_min if t["with"] else math.nan,
            raw_sum_max=self.raw_max if t["with"] else math.nan,
        )

        # The join is spent: what the log does not keep (the steps, the job codes, the
        # outcome table's keys) is dropped before its columns are joined.
        paths = self.paths
        del self.paths
        unit, names = paths.unit, paths.names
        pair_first, pair_second, pair_depth = paths.pair_first, paths.pair_second, paths.pair_depth
        outputs_read, not_intervals = paths.outputs_read, paths.not_intervals
        chains = self.chains.result()
        unit["tree_path"] = tree_paths(
            paths.step["form"], unit["step_start"], unit["step_count"], unit["nested"]
        )
        paths.step.clear()
        paths.codes.clear()
        del paths
        self.seen = np.zeros(0, bool)
        found, self.found = self.found, {name: [] for name in self.found}
        # Only the outcomes questions kept, renumbered: per question an outcome id, per
        # outcome the columns the tables read.
        # (A table over the outcome ids, not np.unique: its sort of 13.7 million ids at
        # 1000x took ~200 MB of temporaries.)
        kept = np.zeros(len(self.outcomes), bool)
        for piece in found["o"]:
            kept[piece] = True
        used = np.flatnonzero(kept)
        smallest = narrow_type(0, max(len(used) - 1, 0))  # as narrow(outcome)
        renumber = (np.cumsum(kept, dtype=np.int64) - 1).astype(smallest)
        del kept
        found["o"] = [renumber[piece] for piece in _emptied(found["o"])]
        # One column at a time, each piece freed once copied, the heap handed back after
        # each: never every piece beside its whole copy.
        empty = {"unit": np.int32, "depth": np.int16, "first": np.bool_, "o": smallest}
        columns = {}
        for name, pieces in found.items():
            dtype = np.result_type(*pieces) if pieces else np.dtype(empty[name])
            columns[name] = joined(pieces, dtype)
            release_freed()
        take = self.outcomes.take
        true, picked = take("true", used), take("picked", used)
        outcome_columns = {
            "o_options": take("width", used).astype(np.int16),
            "o_selected": take("selected", used),
            "o_true": take("true_p", used),
            "o_holds": np.where(true < 0, -1, true == picked).astype(np.int8),
            "o_entropy": take("entropy", used),
        }
        p, p_start, chosen, truth = option_vectors(self.outcomes, used)
        self.outcomes = OutcomeTable(())
        self.pairs = PairScorer(self.sets, self.outcomes)
        # Unit columns in their smallest integer types (codes, depths, counts: 409,600 units
        # at 100×); the statistics cast before building keys from them.
        units = {name: _narrowed(unit.pop(name)) for name in list(unit)}
        return AnswerLog(
            units=units,
            names=names,
            pair_first=_narrowed(pair_first),
            pair_second=_narrowed(pair_second),
            pair_depth=_narrowed(pair_depth),
            outputs_read=outputs_read,
            not_intervals=not_intervals,
            q_unit=columns["unit"],
            q_depth=columns["depth"],
            q_first=columns["first"],
            q_outcome=columns["o"],
            **outcome_columns,
            o_p=p,
            o_p_start=p_start,
            o_chosen=chosen,
            o_truth=truth,
            pair_id=pairs.pair_id,
            pair_first_right=pairs.first_right,
            pair_second_right=pairs.second_right,
            pair_averaged_ties=pairs.averaged_ties,
            counts=counts,
            chains=chains,
        )


def _emptied(pieces: list[np.ndarray]) -> Iterator[np.ndarray]:
    """``pieces`` in order, each dropped from the list as it is handed out."""
    pieces.reverse()
    while pieces:
        yield pieces.pop()


def _narrowed(column: np.ndarray) -> np.ndarray:
    """An integer ``column`` in its smallest type (itself when it has it already)."""
    if column.dtype.kind != "i":
        return column
    if not len(column):
        return column.astype(np.int8)
    return column.astype(narrow_type(int(column.min()), int(column.max())), copy=False)


def _first_of(line: np.ndarray, key: np.ndarray) -> np.ndarray:
    """True on the first row of each (request, asked key) pair, rows in log order."""
    first = np.zeros(len(line), bool)
    if len(line):
        packed = (line.astype(np.int64) - int(line.min())) * (int(key.max()) + 1) + key
        first[np.unique(packed, return_index=True)[1]] = True
    return first


def order_pair(orders: tuple[str, ...]) -> tuple[str, str]:
    """The two option orders to pair: ascending and reversed, else a run's only two."""
    if len(orders) == 2 and not {"ascending", "reversed"} <= set(orders):
        return orders[0], orders[1]
    return "ascending", "reversed"


def load_answers(
    run_dir: Path | str, orders: tuple[str, str] = ("ascending", "reversed")
) -> AnswerLog:
    """Stream outputs.jsonl, then requests.jsonl, of ``run_dir`` into an AnswerLog.

    ``orders`` names the two option orders whose identical questions are compared.
    """
    folder = Path(run_dir)
    join = AnswersJoin(read_paths(folder / "outputs.jsonl", orders))
    requests = folder / "requests.jsonl"
    if stored(requests).is_file():
        reader = join.reader()
        for record in JsonlReader[RequestLine](requests):  # each line decoded whole
            reader.line(record)
        reader.flush()
    return join.result(stored(requests).is_file())
