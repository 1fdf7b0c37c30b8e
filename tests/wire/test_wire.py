"""harness.wire: the Decisions and chat translations, as round trips and by their rules."""

from __future__ import annotations

import math
import string
from typing import Any

import pytest
from hypothesis import assume, example, given
from hypothesis import strategies as st

from harness.wire import (
    WireError,
    from_chat_completion,
    from_chat_completions,
    from_chat_request,
    from_decisions_request,
    from_decisions_response,
    is_refusal,
    label_tokens,
    parse_prompt,
    render_prompt,
    state_from_text,
    state_text,
    to_chat_completion,
    to_chat_request,
    to_chat_requests,
    to_decisions_request,
    to_decisions_response,
)
from harness.wire.chat import CHAT_QID, NEVER

# --- strategies: System One bodies in the domain the translations keep exactly -----------

# Text without the marker lines the Decisions noul translation appends.
TEXT = st.text(max_size=30).filter(lambda t: "when: " not in t)
SCALAR = st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=8)
JSON = st.recursive(
    SCALAR,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)
STATE = st.one_of(
    TEXT.filter(lambda t: t[:1] not in ("{", "[")),
    st.dictionaries(st.text(max_size=6), JSON, max_size=3),
    st.lists(JSON, max_size=3),
)
CHOICE = st.fixed_dictionaries(
    {
        "type": st.just("choice"),
        "instructions": TEXT,
        "criteria": st.dictionaries(
            st.text(min_size=1, max_size=6), st.none() | TEXT, min_size=1, max_size=40
        ),
    }
)
NOUL_CRITERIA = st.fixed_dictionaries({"true": st.none() | TEXT, "false": st.none() | TEXT}).filter(
    lambda c: c["true"] is not None or c["false"] is not None
)
NOUL = st.fixed_dictionaries(
    {"type": st.just("noul"), "instructions": TEXT}, optional={"criteria": NOUL_CRITERIA}
)
SCORE = st.fixed_dictionaries(
    {
        "type": st.just("score"),
        "instructions": TEXT,
        "criteria": st.lists(TEXT, min_size=2, max_size=10),
    }
)
BODY = st.fixed_dictionaries(
    {
        "model": st.text(max_size=10),
        "state": STATE,
        "questions": st.dictionaries(
            st.text(min_size=1, max_size=6), CHOICE | NOUL | SCORE, min_size=1, max_size=4
        ),
    }
)
PROBABILITY = st.floats(0, 1)


@st.composite
def answered(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any]]:
    """A request body and a System One response answering every question of it."""
    body = draw(BODY)
    answers: dict[str, Any] = {}
    for qid, question in body["questions"].items():
        if draw(st.integers(0, 9)) == 0:
            answers[qid] = {"type": "refusal", "refusal": draw(TEXT), "reason": "refusal"}
        elif question["type"] == "noul":
            answers[qid] = {"type": "noul", "noul": draw(PROBABILITY)}
        elif question["type"] == "choice":
            labels = list(question["criteria"])
            given = draw(st.lists(st.sampled_from(labels), unique=True, min_size=1))
            answers[qid] = {"type": "choice", "choice": draw(st.sampled_from(labels)),
                            "confidence": draw(PROBABILITY),
                            "probabilities": {label: draw(PROBABILITY) for label in given}}  # fmt: skip
        else:
            levels = question["criteria"]
            answers[qid] = {"type": "score", "score": draw(st.floats(0, len(levels) - 1)),
                            "confidence": draw(PROBABILITY),
                            "legend": {str(i): level for i, level in enumerate(levels)},
                            "probabilities": {str(i): draw(PROBABILITY) for i in range(len(levels))}}  # fmt: skip
    usage = {"input_tokens": draw(st.integers(0, 10**6)), "output_tokens": draw(st.integers(0, 99))}
    return body, {"model": draw(st.text(max_size=8)), "answers": answers, "usage": usage}


def orders(body: dict[str, Any]) -> list[Any]:
    """Question and option order (dict equality ignores order, and option order is data;
    a noul's two descriptions have no order that means anything)."""
    return [
        (qid, list(q["criteria"]) if q["type"] != "noul" else None)
        for qid, q in body["questions"].items()
    ]


# --- Decisions ----------------------------------------------------------------------------

EXAMPLE = {
    "model": "jev-latest",
    "state": {"expression": "(7 + 8) * 1 + (0)"},
    "questions": {
        "q1": {"type": "choice", "instructions": "Select the interval containing x.",
               "criteria": {"1": "10 <= x < 20", "0": "0 <= x < 10"}},
        "q2": {"type": "noul", "instructions": "Is x even?",
               "criteria": {"false": "x is odd", "true": "x is even"}},
        "q3": {"type": "score", "instructions": "How large?", "criteria": ["small", "large"]},
    },
}  # fmt: skip


def test_decisions_request_shape() -> None:
    sent = to_decisions_request(EXAMPLE)
    assert sent == {
        "model": "jev-latest",
        "input": '{"expression":"(7 + 8) * 1 + (0)"}',
        "questions": [
            {"name": "q1", "type": "choice", "instructions": "Select the interval containing x.",
             "choices": [{"value": "1", "description": "10 <= x < 20"},
                         {"value": "0", "description": "0 <= x < 10"}]},
            {"name": "q2", "type": "predicate",
             "instructions": "Is x even?\n\nTrue when: x is even\nFalse when: x is odd"},
            {"name": "q3", "type": "score", "instructions": "How large?",
             "levels": [{"label": "small"}, {"label": "large"}]},
        ],
    }  # fmt: skip


@given(BODY)
@example({"model": "m", "state": "", "questions": {"q": {"type": "noul", "instructions": ""}}})
@example({"model": "m", "state": "x", "questions": {"q": {"type": "choice", "instructions": "é\n",
          "criteria": {"b": None, "a": "line\nbreak"}}}})  # fmt: skip
def test_decisions_request_round_trip(body: dict[str, Any]) -> None:
    back = from_decisions_request(to_decisions_request(body))
    assert back == body and orders(back) == orders(body)


def test_decisions_request_canonical_forms() -> None:
    odd = {"model": "m", "state": "s", "questions": {
        "n": {"type": "noul", "instructions": None, "criteria": {"true": None, "false": None}},
        "c": {"type": "choice", "instructions": {"ask": 1}, "criteria": {"a": ["x"]}}}}  # fmt: skip
    back = from_decisions_request(to_decisions_request(odd))
    assert back["questions"]["n"] == {"type": "noul", "instructions": ""}
    assert back["questions"]["c"] == {
        "type": "choice",
        "instructions": '{"ask":1}',
        "criteria": {"a": '["x"]'},
    }
    with pytest.raises(WireError, match="no 'box' questions"):
        to_decisions_request({"model": "m", "state": "s", "questions": {"b": {"type": "box"}}})


@given(answered())
def test_decisions_response_round_trip(pair: tuple[dict[str, Any], dict[str, Any]]) -> None:
    body, response = pair
    sent = to_decisions_response(body, response)
    assert [a["name"] for a in sent["answers"]] == list(body["questions"])
    assert from_decisions_response(body, sent) == response


def test_decisions_refusals_positions_and_gaps() -> None:
    reply = {
        "model": "gpt-x",
        "answers": [
            {"type": "refusal", "name": None},
            {"type": "predicate", "name": None, "probability": 0.25},
            {"type": "score", "name": None, "score": 0.4, "confidence": 0.6,
             "probabilities": [{"label": "small", "value": 0, "probability": 0.6},
                               {"label": "large", "value": 1, "probability": 0.4}]},
        ],
        "usage": {"input_tokens": 10, "output_tokens": 0, "total_tokens": 10},
    }  # fmt: skip
    got = from_decisions_response(EXAMPLE, reply)
    assert is_refusal(got["answers"]["q1"]) and got["answers"]["q1"]["reason"] == "refusal"
    assert got["answers"]["q2"] == {"type": "noul", "noul": 0.25}
    assert got["answers"]["q3"]["legend"] == {"0": "small", "1": "large"}
    assert got["usage"] == {"input_tokens": 10, "output_tokens": 0}
    # Named answers in another order, one missing: matched by name, the gap left out.
    named = {**reply, "answers": [{**reply["answers"][1], "name": "q2"}]}
    assert list(from_decisions_response(EXAMPLE, named)["answers"]) == ["q2"]
    with pytest.raises(WireError, match="answers must be an array"):
        from_decisions_response(EXAMPLE, {"model": "m", "answers": {}})


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"model": "m", "input": [{"role": "user"}], "questions": []}, "text input only"),
        ({"model": "m", "input": "x", "questions": [{"type": "predicate"}]}, "instructions"),
        (
            {"model": "m", "input": "x", "questions": [{"type": "guess", "instructions": ""}]},
            "type",
        ),
        (
            {
                "model": "m",
                "input": "x",
                "questions": [
                    {"type": "predicate", "name": "a", "instructions": ""},
                    {"type": "predicate", "name": "a", "instructions": ""},
                ],
            },
            "names another",
        ),
    ],
)
def test_decisions_requests_serve_sim_refuses(body: dict[str, Any], message: str) -> None:
    with pytest.raises(WireError, match=message):
        from_decisions_request(body)


@given(STATE)
def test_state_text_round_trip(state: Any) -> None:
    assert state_from_text(state_text(state)) == state


# --- chat: tokens and prompt ---------------------------------------------------------------


@given(st.lists(st.text(min_size=1, max_size=4), unique=True, min_size=1, max_size=300))
def test_label_tokens_are_distinct_and_follow_the_rule(labels: list[str]) -> None:
    tokens, scheme = label_tokens(labels)
    assert len(tokens) == len(set(tokens)) == len(labels)
    single = set(string.ascii_letters + string.digits)
    if all(len(label) == 1 and label in single for label in labels):
        assert (tokens, scheme) == (tuple(labels), "labels")
    elif len(labels) <= 26:
        assert scheme == "letters" and tokens == tuple(string.ascii_uppercase[: len(labels)])
    else:
        assert scheme == "numbers" and tokens == tuple(str(i) for i in range(len(labels)))


def test_more_than_a_thousand_options_are_refused() -> None:
    with pytest.raises(WireError, match="at most 1000"):
        label_tokens([f"o{i}" for i in range(1001)])


@given(
    st.sampled_from(["choice", "noul", "score"]),
    JSON,
    JSON,
    st.dictionaries(st.text(min_size=1, max_size=5), JSON, min_size=1, max_size=30),
)
def test_prompt_round_trip(
    kind: str, state: Any, instructions: Any, options: dict[str, Any]
) -> None:
    if kind == "noul":
        options = {"true": options.get("a"), "false": options.get("b")}
    elif kind == "score":
        options = {
            str(i): text if text is not None else "" for i, text in enumerate(options.values())
        }
    assert parse_prompt(render_prompt(kind, state, instructions, options)) == (
        kind,
        state,
        instructions,
        options,
    )


@given(BODY)
@example({"model": "m", "state": "s", "questions": {"q": {"type": "choice", "instructions": "?",
          "criteria": {"B": "x", "zz": None, "A": "y"}}}})  # fmt: skip
@example({"model": "m", "state": [], "questions": {"q": {"type": "choice", "instructions": "?",
          "criteria": {"b": ") \"", "a": "\n\nReply with one of: a"}}}})  # fmt: skip
def test_chat_request_round_trip(body: dict[str, Any]) -> None:
    for qid, asked in to_chat_requests(body, model="llama").items():
        assert asked.body["max_tokens"] == 1 and asked.body["logprobs"] is True
        request, again = from_chat_request(asked.body)
        assert again == asked.__class__(**{**asked.__dict__, "qid": CHAT_QID})
        expected = {"model": "llama", "state": body["state"],
                    "questions": {CHAT_QID: body["questions"][qid]}}  # fmt: skip
        assert request == expected and orders(request) == orders(expected)


def test_chat_requests_serve_sim_refuses() -> None:
    asked = to_chat_request(EXAMPLE, "q1")
    messages = asked.body["messages"]
    tampered = messages[1]["content"].replace("Reply with one of: 1, 0", "Reply with one of: 0, 1")
    for bad in (
        [messages[1]],
        [{"role": "system", "content": "You are helpful."}, messages[1]],
        [messages[0], {"role": "user", "content": "What is 7 + 8?"}],
        [messages[0], {"role": "user", "content": tampered}],
    ):
        with pytest.raises(WireError):
            from_chat_request({**asked.body, "messages": bad})


# --- chat: completions ---------------------------------------------------------------------


def completion(tokens: list[tuple[str, float]], refusal: str | None = None) -> dict[str, Any]:
    first = {"token": tokens[0][0], "logprob": tokens[0][1]} if tokens else None
    top = [{"token": t, "logprob": lp} for t, lp in tokens]
    logprobs = {"content": [{**first, "top_logprobs": top}]} if first else None
    message = {"role": "assistant", "content": tokens[0][0] if tokens else "", "refusal": refusal}
    return {"model": "m", "choices": [{"index": 0, "message": message, "logprobs": logprobs}],
            "usage": {"prompt_tokens": 7, "completion_tokens": 1}}  # fmt: skip


def test_label_probabilities_coverage_and_spaces() -> None:
    asked = to_chat_request(EXAMPLE, "q1")  # labels "1", "0" name themselves
    got = from_chat_completion(
        asked,
        completion(
            [
                ("1", math.log(0.5)),
                (" 1", math.log(0.1)),
                ("The", math.log(0.3)),
                ("0", math.log(0.1)),
            ]
        ),
    )
    assert got["choice"] == "1" and got["probabilities"] == pytest.approx(
        {"1": 0.6 / 0.7, "0": 0.1 / 0.7}
    )
    assert (
        got["coverage"] == pytest.approx(0.7) and got["missing"] == [] and got["alternatives"] == 4
    )
    noul = from_chat_completion(
        to_chat_request(EXAMPLE, "q2"), completion([("B", math.log(0.2)), ("A", math.log(0.6))])
    )
    assert noul["noul"] == pytest.approx(0.75)
    score = from_chat_completion(
        to_chat_request(EXAMPLE, "q3"), completion([("1", math.log(0.9)), ("0", math.log(0.1))])
    )
    assert score["score"] == pytest.approx(0.9) and score["legend"] == {"0": "small", "1": "large"}


def test_refusals_and_replies_without_labels_or_logprobs() -> None:
    asked = to_chat_request(EXAMPLE, "q1")
    refused = from_chat_completion(asked, completion([], refusal="I can't help with that."))
    assert is_refusal(refused) and refused["reason"] == "refusal"
    stray = from_chat_completion(asked, completion([("I", -0.1), ("Sure", -3.0)]))
    assert is_refusal(stray) and stray["reason"] == "no_label" and "'I'" in stray["refusal"]
    with pytest.raises(WireError, match="ignored logprobs"):
        from_chat_completion(asked, completion([]))
    with pytest.raises(WireError, match="choices"):
        from_chat_completion(asked, {"choices": []})


@st.composite
def distributions(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, float], int]:
    labels = draw(st.lists(st.text(min_size=1, max_size=4), unique=True, min_size=1, max_size=120))
    weights = [draw(st.integers(0, 100)) for _ in labels]
    assume(sum(weights) > 0)
    body = {"model": "m", "state": "s", "questions": {"q": {"type": "choice", "instructions": "?",
            "criteria": dict.fromkeys(labels)}}}  # fmt: skip
    probabilities = {label: w / sum(weights) for label, w in zip(labels, weights, strict=True)}
    return body, probabilities, draw(st.integers(1, 30))


@given(distributions())
def test_served_logprobs_give_back_the_distribution(
    case: tuple[dict[str, Any], dict[str, float], int],
) -> None:
    body, probabilities, n = case
    asked = to_chat_request(body, "q", top_logprobs=n)
    chosen = max(probabilities, key=lambda label: probabilities[label])
    answer = {
        "type": "choice",
        "choice": chosen,
        "confidence": probabilities[chosen],
        "probabilities": probabilities,
    }
    served = to_chat_completion(asked, answer, model="sim", usage={"input_tokens": 3})
    assert len(served["choices"][0]["logprobs"]["content"][0]["top_logprobs"]) == min(
        n, len(probabilities)
    )
    got = from_chat_completion(asked, served)
    assert got["choice"] == chosen
    returned = [label for label in probabilities if label not in got["missing"]]
    assert len(returned) == min(n, len(probabilities))
    mass = sum(probabilities[label] for label in returned)
    assert got["coverage"] == pytest.approx(mass)
    for label in returned:
        assert got["probabilities"][label] == pytest.approx(probabilities[label] / mass, abs=1e-12)
    # The options left out are never more probable than the least probable one returned.
    if got["missing"]:
        floor = min(probabilities[label] for label in returned)
        assert max(probabilities[label] for label in got["missing"]) <= floor


def test_zero_probabilities_are_reported_as_never() -> None:
    asked = to_chat_request(EXAMPLE, "q1")
    answer = {
        "type": "choice",
        "choice": "0",
        "confidence": 1.0,
        "probabilities": {"0": 1.0, "1": 0.0},
    }
    served = to_chat_completion(asked, answer, model="sim")
    top = served["choices"][0]["logprobs"]["content"][0]["top_logprobs"]
    assert [(t["token"], t["logprob"]) for t in top] == [("0", 0.0), ("1", NEVER)]
    assert from_chat_completion(asked, served)["probabilities"] == {"1": 0.0, "0": 1.0}


def test_completions_combine_into_one_response() -> None:
    asked = to_chat_requests(EXAMPLE)
    replies = {
        qid: completion([(q.tokens[0], -0.1), (q.tokens[1], -2.5)]) for qid, q in asked.items()
    }
    del replies["q3"]
    combined = from_chat_completions(EXAMPLE, asked, replies)
    assert list(combined["answers"]) == ["q1", "q2"]
    assert (
        combined["usage"] == {"input_tokens": 14, "output_tokens": 2} and combined["model"] == "m"
    )
