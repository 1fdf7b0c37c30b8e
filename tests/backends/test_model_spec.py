"""Model specs with options: ``sim:seed=7`` in ``run --model`` and ``compare --models``."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.backends import ModelSpec, parse_model, split_models
from harness.errors import ConfigError
from runfolder import load_manifest
from tests.runhelpers import cli


def test_sim_knobs_ride_on_the_name() -> None:
    assert parse_model("sim") == ModelSpec("sim")
    spec = parse_model("sim:confusion=0.3,seed=3")
    assert spec.name == "sim" and dict(spec.sim) == {"confusion": "0.3", "seed": "3"}
    assert parse_model(" sim:seed=7 ") == ModelSpec("sim", sim={"seed": "7"})


def test_other_settings_come_from_the_base() -> None:
    base = ModelSpec(timeout_s=5.0, max_attempts=2)
    spec = parse_model("sim:seed=7", base)
    assert (spec.timeout_s, spec.max_attempts) == (5.0, 2)
    assert dict(spec.sim) == {"seed": "7"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("sim:wisdom=1", "sim has no knob 'wisdom'"),
        ("sim:confusion=abc", "sim knob confusion='abc' is not a number"),
        ("sim:seed=1.5", "sim knob seed='1.5' is not a number"),
        ("sim:slip_bit=2", "slip_bit must lie in [0, 1]"),
    ],
)
def test_a_malformed_knob_is_refused_when_the_spec_is_read(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        parse_model(text)
    with pytest.raises(ConfigError, match="apply only to the model sim"):
        ModelSpec("oracle", sim={"seed": "1"})


def test_served_models_take_a_base_url_and_keep_colons_in_their_names() -> None:
    spec = parse_model("jev-latest:base_url=http://127.0.0.1:8377")
    assert spec == ModelSpec("jev-latest", base_url="http://127.0.0.1:8377")
    free = parse_model("openai/gpt-4o:free")  # OpenRouter's suffix is part of the name
    assert free.name == "openai/gpt-4o:free" and free.base_url is None
    with pytest.raises(ConfigError, match="and so does --base-url"):
        parse_model("jev:base_url=http://a", ModelSpec(base_url="http://b"))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("sim:seed", "has ':' but no KEY=VALUE"),
        ("sim:seed=1,seed=2", "sets 'seed' twice"),
        ("oracle:seed=1", "oracle takes no option 'seed'"),
        ("jev-latest:seed=7", "sim knobs go with sim"),
        (":seed=7", "no model name"),
        ("sim:seed=", "not KEY=VALUE"),
    ],
)
def test_bad_specs_are_refused_with_the_fix(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_model(text)


def test_models_split_on_commas_that_start_a_model() -> None:
    assert split_models("sim,sim:seed=7") == ["sim", "sim:seed=7"]
    assert split_models("sim, sim:confusion=0.3,seed=3,oracle") == [
        "sim",
        "sim:confusion=0.3,seed=3",
        "oracle",
    ]
    with pytest.raises(ConfigError, match="no model before it"):
        split_models("seed=3,sim")


knob = st.sampled_from(["confusion", "slip_bit", "primacy"])
value = st.from_regex(r"0(\.[0-9]{1,3})?|1", fullmatch=True)
seed = st.dictionaries(st.just("seed"), st.integers(0, 999).map(str), max_size=1)


@given(st.lists(st.tuples(st.dictionaries(knob, value, max_size=3), seed), min_size=1, max_size=4))
def test_specs_read_back_and_split_back(
    knobs: list[tuple[dict[str, str], dict[str, str]]],
) -> None:
    options = [{**rates, **seeds} for rates, seeds in knobs]
    texts = ["sim:" + ",".join(f"{k}={v}" for k, v in o.items()) if o else "sim" for o in options]
    assert [parse_model(text) for text in texts] == [ModelSpec("sim", sim=o) for o in options]
    assert split_models(",".join(texts)) == texts


def test_run_model_takes_a_spec(tmp_path: Path) -> None:
    folder = tmp_path / "r"
    assert cli("run", "--suite", "exploratory", "--model", "sim:seed=7", "--run", str(folder),
               "--no-progress") == 0  # fmt: skip
    model = load_manifest(folder).model
    assert model.name == "sim" and model.params["seed"] == 7
    assert cli("run", "--model", "sim:seed=x", "--run", str(tmp_path / "bad")) == 2
    assert not (tmp_path / "bad").exists()
