"""``CompareOptions`` carries one base ``ModelSpec`` (the options ``run`` builds), each model's
spec derived from it; ``compare.json`` keeps it, and a record written when the model options
stood side by side with the others (before) is read to the same specs."""

from __future__ import annotations

import argparse

import orjson
from hypothesis import given
from hypothesis import strategies as st

from harness.backends import ModelSpec, parse_model
from harness.commands.model_options import add_model_options, base_spec, model_spec
from harness.comparing.options import CompareOptions

SERVED = "gpt-x"


def _args(*argv: str, one_model: bool = True) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_model_options(parser, one_model=one_model)
    return parser.parse_args(list(argv))


specs = st.builds(
    ModelSpec,
    name=st.just(""),
    base_url=st.sampled_from([None, "http://127.0.0.1:8377"]),
    timeout_s=st.floats(0.5, 90.0),
    max_attempts=st.integers(1, 9),
    price_per_million=st.sampled_from([None, 0.0, 0.15]),
    price_per_million_output=st.sampled_from([None, 2.0]),
    wire=st.sampled_from(["systemone", "openai-chat"]),
    top_logprobs=st.integers(1, 20),
)


@given(specs, st.integers(1, 64), st.booleans())
def test_the_record_reads_back_to_the_same_options(
    model: ModelSpec, concurrency: int, compress: bool
) -> None:
    options = CompareOptions(model=model, concurrency=concurrency, compress=compress)
    record = orjson.loads(orjson.dumps(options.to_record()))  # as compare.json holds it
    assert CompareOptions.from_record(record) == options


@given(specs)
def test_a_record_from_before_reads_to_the_same_specs(model: ModelSpec) -> None:
    # compare.json as written when CompareOptions copied seven model options field by field
    # (wire and top_logprobs None: the served model's own).
    old = {
        "base_url": model.base_url,
        "timeout_s": model.timeout_s,
        "max_attempts": model.max_attempts,
        "price_per_million": model.price_per_million,
        "price_per_million_output": model.price_per_million_output,
        "wire": None if model.wire == "systemone" else model.wire,
        "top_logprobs": model.top_logprobs,
        "concurrency": 8,
        "rps": None,
        "skip_check": False,
        "summary": {"metric": "mape"},
        "compress": False,
        "per_model": None,
        "sequential": None,
    }
    options = CompareOptions.from_record(old)
    assert options == CompareOptions(model=model, concurrency=8, summary={"metric": "mape"})
    for name in ("sim:seed=7", SERVED):
        assert parse_model(name, options.base(name)) == parse_model(
            name, CompareOptions(model=model).base(name)
        )


def test_each_model_s_spec_is_run_s_with_the_served_options_only_for_served_models() -> None:
    argv = ("--timeout", "7", "--max-attempts", "2", "--wire", "openai-chat")
    argv += ("--top-logprobs", "5", "--price-per-million", "0.5")
    options = CompareOptions(model=base_spec(_args(*argv, one_model=False)))
    # A served model's spec is exactly the one `run --model gpt-x` builds from the same options.
    served = parse_model(SERVED, options.base(SERVED))
    assert served == model_spec(_args("--model", SERVED, *argv))
    # --wire and --top-logprobs are the served models'; the rest applies to every model.
    sim = parse_model("sim:seed=7", options.base("sim:seed=7"))
    assert (sim.wire, sim.top_logprobs) == ("systemone", ModelSpec().top_logprobs)
    assert (sim.timeout_s, sim.max_attempts, sim.price_per_million) == (7.0, 2, 0.5)
    assert sim.sim == {"seed": "7"}


def test_a_profile_s_timeout_and_attempts_replace_the_options_for_its_model_only() -> None:
    model = ModelSpec(name="", timeout_s=30.0, max_attempts=6)
    options = CompareOptions(model=model, per_model={"sim": {"timeout": 7.5, "max_attempts": 2}})
    assert (options.base("sim").timeout_s, options.base("sim").max_attempts) == (7.5, 2)
    assert (options.base(SERVED).timeout_s, options.base(SERVED).max_attempts) == (30.0, 6)
