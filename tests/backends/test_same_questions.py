"""benchmarks.same_questions: pairing two runs' answers to the same questions."""

from __future__ import annotations

from pathlib import Path

import orjson
from hypothesis import given
from hypothesis import strategies as st

from benchmarks.same_questions import answers, compare

# Hundredths, as Jev rounds them: two near-equal floats could divide into a tie on one side
# only (each side renormalises by its own total) and flip the top choice.
weights = st.lists(st.integers(1, 100).map(lambda n: n / 100), min_size=2, max_size=10)


def _answer(probabilities: dict[str, float]) -> dict[str, object]:
    total = sum(probabilities.values())
    normal = {label: p / total for label, p in probabilities.items()}
    return {
        "type": "choice",
        "choice": max(normal, key=normal.__getitem__),
        "probabilities": normal,
    }


@given(weights, st.integers(0, 8))
def test_a_top_k_view_of_the_same_answer_agrees_over_the_options_both_scored(
    values: list[float], dropped: int
) -> None:
    full = {str(i): v for i, v in enumerate(values)}
    best = max(full, key=full.__getitem__)
    # A server that returns fewer alternatives keeps the likeliest; drop others.
    kept = {label: v for label, v in full.items() if label == best or int(label) >= dropped}
    key = ("job", b"{}", b"{}")
    result = compare({key: _answer(full)}, {key: _answer(kept)})
    assert result["shared"] == 1 and result["same_choice"] == 1 and result["different"] == []
    assert result["max_probability_gap_common_options"] < 1e-9


def test_a_different_choice_is_listed_and_unshared_questions_are_not_compared() -> None:
    a = {("j", b"s", b"q1"): _answer({"0": 0.9, "1": 0.1}), ("j", b"s", b"q2"): _answer({"0": 1})}
    b = {("j", b"s", b"q1"): _answer({"0": 0.2, "1": 0.8})}
    result = compare(a, b)
    assert (result["questions_a"], result["questions_b"], result["shared"]) == (2, 1, 1)
    assert result["same_choice"] == 0 and len(result["different"]) == 1
    assert result["max_probability_gap"] > 0.5


def test_answers_reads_a_run_folder_and_skips_refusals(tmp_path: Path) -> None:
    request = {"state": {"x": 1}, "questions": {"q1": {"type": "choice"}, "q2": {"type": "choice"}}}
    response = {"answers": {"q1": _answer({"0": 0.4, "1": 0.6}), "q2": {"type": "refusal"}}}
    line = {"job": "j", "request": request, "response": response}
    (tmp_path / "requests.jsonl").write_bytes(orjson.dumps(line) + b"\n")
    found = answers(tmp_path)
    assert [value["choice"] for value in found.values()] == ["1"]
