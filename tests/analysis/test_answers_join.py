"""The vectorised Probabilities join gives what the question-by-question loop it replaced
gave, on random small logs (hypothesis): counts, question rows, label sets and order pairs
(matched as a pending answer and its partner), whatever the chunking of the rows."""

from __future__ import annotations

import math
from decimal import Decimal
from pathlib import Path
from typing import Any
from unittest.mock import patch

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from probability_logs import LogWriter, tree_path

from analysis.loading.probabilities import answer_pairs
from analysis.loading.probabilities.answer_outcomes import MISMATCH, WITH, WITHOUT, evaluate
from analysis.loading.probabilities.answer_pairs import LabelSets
from analysis.loading.probabilities.answers import AnswersJoin
from analysis.loading.probabilities.asked import AskedReader
from analysis.loading.probabilities.interval_paths import PathTable, read_paths
from analysis.loading.run import load_run
from runfolder import JsonlReader

ORDERS = ("ascending", "reversed")


def _reference(paths: PathTable, records: list[dict[str, Any]]) -> dict[str, Any]:
    """The join as it was: one question at a time, in log order (kept here as the spec)."""
    n_decoders = len(paths.codes["decoder"])
    sets = LabelSets()
    pending: dict[int, tuple[Any, ...]] = {}
    scored: list[tuple[int, float, float, float]] = []
    without = 0
    seen: set[tuple[int, int]] = set()
    tally = dict.fromkeys(("answered", "with", "without", "unusable", "mismatch", "dup"), 0)
    rows: list[tuple[Any, ...]] = []
    for record in records:
        qmap, response, request = record.get("qmap"), record.get("response"), record.get("request")
        if record.get("error") is not None or not isinstance(qmap, dict):
            continue
        if not isinstance(response, dict) or not isinstance(request, dict):
            continue
        answers, questions = response.get("answers"), request.get("questions")
        if not isinstance(answers, dict) or not isinstance(questions, dict):
            continue
        job = paths.codes["job"].get(str(record.get("job")))
        asked: set[Any] = set()
        for qid, where in qmap.items():
            decoder, _, key = where.partition("/")
            code = paths.codes["decoder"].get(decoder)
            if job is None or code is None or not key.isdigit() or int(key) < 1:
                continue
            unit, depth = int(paths.unit_at[job * n_decoders + code]), int(key)
            if unit < 0 or depth > paths.unit["step_count"][unit]:
                continue
            i = int(paths.unit["step_start"][unit]) + depth - 1
            step = {name: int(paths.step[name][i]) for name in ("choice", "k", "truth", "form")}
            choice = paths.names["choice"][step["choice"]]
            outcome = evaluate(
                answers.get(qid),
                questions.get(qid),
                choice,
                step["k"],
                step["truth"],
                step["form"],
            )
            kind = outcome[0]
            if kind == MISMATCH:
                tally["mismatch"] += 1
                continue
            if depth < 64 and (unit, depth) in seen:
                tally["dup"] += 1
                continue
            seen.add((unit, depth))
            tally["answered"] += 1
            if kind == WITHOUT:
                tally["without"] += 1
                continue
            labels = outcome[1]
            if labels is not None:
                sets.get(labels)  # numbered as first met
            if kind != WITH:
                tally["unusable"] += 1
                continue
            _, labels, picked, true, total, raw, selected, true_p, entropy, key_ = outcome
            assert raw is not None
            tally["with"] += 1
            rows.append((unit, depth, key_ not in asked, selected, true_p, entropy, len(raw)))
            asked.add(key_)
            slot = int(paths.step["pair"][i])
            if slot < 0:
                continue
            # Pairs: an answer waits until the next answer to its pair id arrives.
            here = (slot & 1, labels, picked, true, [x / total for x in raw])
            early = pending.pop(slot >> 1, None)
            if early is None:
                pending[slot >> 1] = here
                continue
            if sorted(early[1]) != sorted(labels) or true < 0:
                without += 1
                continue
            first, second = (here, early) if here[0] == 0 else (early, here)
            truth = labels[true]
            vectors = [
                {label: np.float32(p) for label, p in zip(a[1], a[4], strict=True)}
                for a in (first, second)
            ]
            averaged = {
                label: (float(vectors[0][label]) + float(vectors[1][label])) / 2 for label in labels
            }
            top = [x for x in averaged if averaged[x] >= max(averaged.values()) - 1e-6]
            scored.append(
                (
                    slot >> 1,
                    float(first[1][first[2]] == truth),
                    float(second[1][second[2]] == truth),
                    1 / len(top) if truth in top else 0.0,
                )
            )
    return {
        "tally": tally,
        "rows": rows,
        "pairs": scored,
        "without": without,
        "sets": list(sets.ids),
    }


def _run(tmp: Path, draw: Any) -> Path:
    """A few tree paths in two option orders (often alike, so that they share steps), and
    lines answering them at random: mostly the trace's choice with usable probabilities,
    sometimes another choice, none, odd values, a wrong option count, an error."""
    log = LogWriter(n_cells=16)
    jobs = []
    for c in range(draw(st.integers(1, 2))):
        alike = draw(st.lists(st.integers(0, 3), min_size=4, max_size=4))
        for order in ORDERS:
            job = f"c{c}-{order}"
            for decoder, k in (("tree2", 2), ("tree4", 4)):
                picks = (
                    alike
                    if draw(st.booleans())
                    else draw(st.lists(st.integers(0, 3), min_size=4, max_size=4))
                )
                path = tree_path(16, k, lambda d, a, b, cuts, p=picks: p[d - 1] % (len(cuts) - 1))
                log.tree_output(job, decoder, Decimal(5), path, order=order, case=f"c{c}")
                jobs.append((job, decoder, path))
    values = st.sampled_from([0.0, 0.25, 0.5, 1.0])
    odd = st.one_of(
        st.none(),
        st.just({}),
        st.dictionaries(st.sampled_from("0123x"), st.sampled_from([0.0, 0.5, "x", -1])),
    )
    names = sorted({job for job, _, _ in jobs})
    for _ in range(draw(st.integers(0, 30))):
        job = draw(st.sampled_from(names))
        questions: dict[str, Any] = {}
        for q in range(draw(st.integers(1, 3))):
            _, decoder, path = draw(st.sampled_from([j for j in jobs if j[0] == job]))
            depth = draw(st.integers(1, len(path.steps) + 1))
            k, j = path.steps[min(depth, len(path.steps)) - 1][2:]
            labels = [str(i) for i in range(k if draw(st.integers(0, 5)) else 3)]
            if draw(st.booleans()):
                labels.reverse()
            choice = str(j) if draw(st.integers(0, 3)) else str(draw(st.integers(0, 3)))
            if draw(st.integers(0, 3)):
                probs = {label: draw(values) for label in labels}
            else:
                probs = draw(odd)
            questions[f"q{q}"] = (f"{decoder}/{depth}", labels, choice, probs)
        error = {"kind": "x"} if draw(st.integers(0, 9)) == 0 else None
        log.answers(job, 1, questions, error=error)
    return log.write(tmp / "run", orders=list(ORDERS))


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_the_vectorised_join_equals_the_question_by_question_loop(
    data: Any, tmp_path_factory: Any
) -> None:
    chunk_rows = data.draw(st.integers(1, 8))
    chunk_pairs = data.draw(st.sampled_from([1, 3, 1 << 16]))
    folder = _run(tmp_path_factory.mktemp("join"), data.draw)
    records = list(JsonlReader[dict[str, Any]](folder / "requests.jsonl"))
    expected = _reference(read_paths(folder / "outputs.jsonl", ORDERS), records)
    join = AnswersJoin(read_paths(folder / "outputs.jsonl", ORDERS))
    reader = AskedReader(join.add, job_codes=join.paths.codes["job"], rows=chunk_rows)
    # Pairs matched a few answers at a time, or all at once: the same pairs.
    with patch.object(answer_pairs, "CHUNK", chunk_pairs):
        for record in records:
            reader.line(record)
        reader.flush()
        got = join.result(True)
    parts = load_run(folder, probabilities=True).answers  # lines read as RequestParts
    assert parts is not None and parts.counts == got.counts
    t = expected["tally"]
    c = got.counts
    assert (c.answered, c.with_probabilities, c.without_probabilities) == (
        t["answered"],
        t["with"],
        t["without"],
    )
    assert (c.unusable, c.choice_mismatch, c.duplicates) == (t["unusable"], t["mismatch"], t["dup"])
    assert list(join.sets.ids) == expected["sets"]  # numbered as first met
    for log in (got, parts):
        rows = list(
            zip(
                log.q_unit.tolist(),
                log.q_depth.tolist(),
                log.q_first.tolist(),
                log.q_selected.tolist(),
                log.q_true.tolist(),
                log.q_entropy.tolist(),
                log.per_question("options").tolist(),
                strict=True,
            )
        )
        assert len(rows) == len(expected["rows"])
        for row, want in zip(rows, expected["rows"], strict=True):
            assert row[:3] == want[:3]
            assert all(
                a == b or (math.isnan(a) and math.isnan(b))
                for a, b in zip(row[3:], want[3:], strict=True)
            )
        pairs = list(
            zip(
                log.pair_id.tolist(),
                log.pair_first_right.tolist(),
                log.pair_second_right.tolist(),
                log.pair_averaged_right.tolist(),
                strict=True,
            )
        )
        assert pairs == expected["pairs"]
        assert log.counts.pairs_without_truth == expected["without"]
