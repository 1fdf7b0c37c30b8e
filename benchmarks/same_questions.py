"""Two runs' answers to the same questions, side by side (``python -m benchmarks.same_questions A B``).

A question is the same in both runs when its job, its state and its whole question body
(instructions, options, order) are equal; sequential decoders ask the same questions only
until the runs' choices first part, so later rounds of a parted job are not compared.
Prints how many shared questions got the same choice, the largest probability gap (as
recorded, and renormalised over the options both runs scored), and each disagreement with both runs' two likeliest options; the last
line is one JSON object. Used to compare a GGUF model read in process with the same file
behind llama.cpp's OpenAI-compatible server (docs/models.md: A real model: SmolLM2-135M).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import orjson

Key = tuple[str, bytes, bytes]


def answers(folder: Path) -> dict[Key, dict[str, Any]]:
    """Every answered choice question of a run folder, keyed by job, state and question."""
    found: dict[Key, dict[str, Any]] = {}
    path = folder / "requests.jsonl"
    if not path.is_file():
        raise SystemExit(f"same_questions: {path} does not exist (give a run folder)")
    for line in path.read_bytes().splitlines():
        record = orjson.loads(line)
        request, response = record.get("request") or {}, record.get("response") or {}
        state = orjson.dumps(request.get("state"), option=orjson.OPT_SORT_KEYS)
        for qid, question in (request.get("questions") or {}).items():
            answer = (response.get("answers") or {}).get(qid)
            if answer is None or answer.get("type") != "choice":
                continue
            body = orjson.dumps(question, option=orjson.OPT_SORT_KEYS)
            found[(record["job"], state, body)] = answer
    return found


def _top(answer: dict[str, Any], n: int = 2) -> list[tuple[str, float]]:
    """The answer's ``n`` likeliest options with their probabilities."""
    ranked = sorted(answer.get("probabilities", {}).items(), key=lambda item: -item[1])
    return [(label, round(p, 4)) for label, p in ranked[:n]]


def _gaps(left: dict[str, float], right: dict[str, float]) -> tuple[float, float]:
    """The largest probability gap as recorded, and after both are renormalised over the
    options both scored (which takes out one run reading fewer options, e.g. a top 20)."""
    common = set(left) & set(right)
    raw = max((abs(left[label] - right[label]) for label in common), default=0.0)
    total_l, total_r = sum(left[x] for x in common), sum(right[x] for x in common)
    if not common or total_l <= 0 or total_r <= 0:
        return raw, 0.0
    fair = max(abs(left[x] / total_l - right[x] / total_r) for x in common)
    return raw, fair


def compare(a: dict[Key, dict[str, Any]], b: dict[Key, dict[str, Any]]) -> dict[str, Any]:
    """Counts of shared questions and agreeing choices, the largest probability gaps
    (recorded, and over the options both scored), and each disagreement."""
    shared = sorted(set(a) & set(b))
    same, gap, fair_gap, parted = 0, 0.0, 0.0, []
    for key in shared:
        left, right = a[key], b[key]
        raw, fair = _gaps(left["probabilities"], right["probabilities"])
        gap, fair_gap = max(gap, raw), max(fair_gap, fair)
        if left["choice"] == right["choice"]:
            same += 1
            continue
        parted.append(
            {
                "job": key[0],
                "a": _top(left),
                "b": _top(right),
                "a_missing": len(left.get("missing", [])),
                "b_missing": len(right.get("missing", [])),
            }
        )
    return {
        "questions_a": len(a),
        "questions_b": len(b),
        "shared": len(shared),
        "same_choice": same,
        "max_probability_gap": round(gap, 6),
        "max_probability_gap_common_options": round(fair_gap, 6),
        "different": parted,
    }


def main(argv: list[str] | None = None) -> int:
    """Print the comparison of two run folders; exit 0."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.same_questions")
    parser.add_argument("a", type=Path, help="a run folder")
    parser.add_argument("b", type=Path, help="another run folder (the same jobs)")
    args = parser.parse_args(argv)
    result = compare(answers(args.a), answers(args.b))
    print(
        f"shared questions: {result['shared']} (A has {result['questions_a']}, "
        f"B {result['questions_b']}); same choice: {result['same_choice']} of {result['shared']}; "
        f"largest probability gap: {result['max_probability_gap']} as recorded, "
        f"{result['max_probability_gap_common_options']} over the options both scored"
    )
    for row in result["different"]:
        print(f"  {row['job']}: A {row['a']} (missing {row['a_missing']}) "
              f"B {row['b']} (missing {row['b_missing']})")  # fmt: skip
    print(orjson.dumps(result).decode())
    return 0


if __name__ == "__main__":
    sys.exit(main())
