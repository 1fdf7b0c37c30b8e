"""The one token rule (``harness.wire.usage``): what serve-sim bills and the dry run counts."""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import given
from hypothesis import strategies as st

from harness.wire import to_chat_requests, to_decisions_request, wire_usage

texts = st.text(max_size=40)
bodies = st.fixed_dictionaries(
    {
        "model": st.just("m"),
        "state": st.fixed_dictionaries({"expression": texts}),
        "questions": st.dictionaries(
            st.sampled_from(["q1", "q2", "q3"]),
            st.fixed_dictionaries(
                {
                    "type": st.just("choice"),
                    "instructions": texts,
                    "criteria": st.dictionaries(
                        st.sampled_from(["0", "1", "2"]), texts, min_size=2
                    ),
                }
            ),
            min_size=1,
        ),
    }
)


@given(bodies)
def test_the_in_process_sim_bills_its_body_by_the_wire_rule(body: dict[str, Any]) -> None:
    expected = wire_usage("systemone", body)
    assert wire_usage("systemone", body, size=len(orjson.dumps(body))) == expected
    assert expected["output_tokens"] == 3 * len(body["questions"])


@given(bodies)
def test_each_wire_bills_what_it_sends(body: dict[str, Any]) -> None:
    sent = to_decisions_request(body)
    assert wire_usage("openai-decisions", sent)["input_tokens"] == max(
        1, len(orjson.dumps(sent)) // 4
    )
    for question in to_chat_requests(body).values():
        used = wire_usage("openai-chat", question.body)
        prompt = sum(len(m["content"]) + 4 for m in question.body["messages"])
        assert used == {"input_tokens": max(1, prompt // 4), "output_tokens": 1}


def test_a_finer_tokenizer_counts_more_tokens() -> None:
    body = {"questions": {"q1": {"type": "choice"}}, "state": "x" * 300}
    assert (
        wire_usage("systemone", body, 1.5)["input_tokens"]
        > wire_usage("systemone", body)["input_tokens"]
    )
