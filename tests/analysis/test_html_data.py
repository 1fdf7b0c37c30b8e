"""The job viewer's data, without a browser: what the page decodes is what the logs hold,
the target's option is the one that holds the target, and the templates ship."""

from __future__ import annotations

import base64
import gzip
import struct
import tomllib
from decimal import Decimal
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from analysis.loading.viewer.rounds import load_rounds
from analysis.loading.viewer.targets import option_holding, target_label
from analysis.rendering.html import _json_block
from analysis.rendering.html_data import PROBABILITY_SCALE, _sorted_order, pack_rounds
from tests.browser import chromium, open_page
from tests.runhelpers import SMALL, cli, records

_DTYPES = {"u8": "<u1", "i16": "<i2", "u16": "<u2", "u32": "<u4", "f32": "<f4"}


def unpack(block: str) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The page's decoder, in Python: header and typed columns of one data block."""
    raw = gzip.decompress(base64.b64decode(block))
    assert raw[:4] == b"NJV1"
    (length,) = struct.unpack("<I", raw[4:8])
    header = orjson.loads(raw[8 : 8 + length])
    base = 8 + length + (-(8 + length)) % 8
    cols = {
        name: np.frombuffer(raw, _DTYPES[dtype], count, base + offset)
        for name, dtype, offset, count in header["columns"]
    }
    return header, cols


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = tmp_path_factory.mktemp("data") / "run"
    # provided=0: the sim reads a provided result without question noise (see below).
    assert cli("run", *SMALL, "--model", "sim:provided=0", "--run", str(run), "--no-progress") == 0
    return run


@given(
    st.lists(st.tuples(st.integers(0, 20), st.integers(0, 3)), max_size=300),
    st.integers(1, 50),
)
def test_questions_sorted_a_range_at_a_time_as_lexsort_sorts_them(
    questions: list[tuple[int, int]], step: int
) -> None:
    """The viewer's question order, found a range of outputs at a time to bound memory, is
    lexsort's: by output, then round, log order within (an output with more questions than
    ``step`` is one range)."""
    q_output = np.array([q for q, _ in questions], np.uint32)
    q_round = np.array([r for _, r in questions], np.uint16)
    n_outputs = int(q_output.max()) + 1 if questions else 0
    counts = np.bincount(q_output, minlength=n_outputs)
    q_start = np.concatenate([[0], np.cumsum(counts)])
    found = _sorted_order(q_output, q_round, q_start, step)
    assert found.tolist() == np.lexsort((q_round, q_output)).tolist()


def test_every_answered_question_decodes_as_logged(folder: Path) -> None:
    header, cols = unpack(pack_rounds(load_rounds(folder)))
    s = header["strings"]
    outputs = {(r["job"], r["decoder"]): r for r in records(folder / "outputs.jsonl")}
    assert header["n_outputs"] == len(outputs)
    where = {
        (s[cols["job_id"][cols["out_job"][o]]], header["decoders"][cols["out_decoder"][o]]): o
        for o in range(header["n_outputs"])
    }
    checked = 0
    for line in records(folder / "requests.jsonl"):
        for qid, meaning in line["qmap"].items():
            decoder, _, step = meaning.partition("/")
            o = where[line["job"], decoder]
            first, last = cols["out_q_start"][o], cols["out_q_start"][o + 1]
            p = int(cols["out_p_start"][o])
            for q in range(first, last):
                spec = header["specs"][cols["q_spec"][q]]
                if cols["q_round"][q] == line["round"] and s[cols["q_step"][q]] == step:
                    sent = line["request"]["questions"][qid]
                    assert spec[2] == list(sent["criteria"])  # options in the order sent
                    assert spec[3] == list(sent["criteria"].values())
                    answer = line["response"]["answers"][qid]
                    probs = cols["p"][p : p + len(spec[2])] / PROBABILITY_SCALE
                    expected = [answer["probabilities"][k] for k in spec[2]]
                    assert np.allclose(probs, expected, atol=0.5 / PROBABILITY_SCALE)
                    assert spec[2][cols["q_choice"][q]] == answer["choice"]
                    assert s[cols["q_state"][q]] == orjson.dumps(line["request"]["state"]).decode()
                    checked += 1
                    break
                p += len(spec[2])
            else:
                raise AssertionError(f"{line['job']} round {line['round']} {meaning} not found")
    assert checked == sum(len(r["qmap"]) for r in records(folder / "requests.jsonl"))
    # Decoded values and targets are the logged exact decimals.
    for (job, decoder), o in list(where.items())[:50]:
        assert s[cols["out_target"][o]] == outputs[job, decoder]["target"]
        assert s[cols["out_value"][o]] == outputs[job, decoder]["value"]


def test_provided_condition_marks_the_chosen_option_as_target(folder: Path) -> None:
    # With provided=0 the sim answers the provided condition of direct choice and ten-way
    # trees exactly, so there the target's option and the chosen one coincide everywhere.
    r = load_rounds(folder)
    for q in range(len(r.q_output)):
        o = r.q_output[q]
        decoder = r.decoders[r.out_decoder[o]]
        if r.conditions[r.job_condition[r.out_job[o]]] == "provided" and decoder in (
            "direct",
            "tree10",
        ):
            assert r.q_target[q] == r.q_choice[q] >= 0


@given(st.integers(0, 99), st.integers(2, 12), st.sampled_from([("0", "0.01"), ("-50", "1")]))
def test_tree_target_label_is_the_child_holding_the_target(
    index: int, k: int, grid: tuple[str, str]
) -> None:
    lower, eps = Decimal(grid[0]), Decimal(grid[1])
    target = lower + eps * index
    record = {"decoder": f"tree{k}", "target": str(target), "L": grid[0], "eps": grid[1], "N": 100}
    a, b = 0, 100
    while b - a > 1:
        step_k = min(k, b - a)
        cuts = [a + (b - a) * j // step_k for j in range(step_k + 1)]
        step = {"parent": [str(lower + eps * a), str(lower + eps * b)], "k": step_k}
        j = int(target_label(record, "1", step) or -1)
        assert cuts[j] <= index < cuts[j + 1]
        a, b = cuts[j], cuts[j + 1]
    outside = {"parent": [str(lower + eps * 100), str(lower + eps * 200)], "k": 2}
    assert target_label(record, "1", outside) is None


@given(st.integers(0, 99))
def test_index_digit_and_bit_labels(index: int) -> None:
    record = {"target": str(index - 50), "L": "-50", "eps": "1", "N": 100}
    digits = f"{index:02d}"
    assert target_label({**record, "decoder": "digits"}, "d1", None) == digits[0]
    assert target_label({**record, "decoder": "digits"}, "d2", None) == digits[1]
    for weight in (64, 32, 16, 8, 4, 2, 1):
        bit = str(int(bool(index & weight)))
        assert target_label({**record, "decoder": "bits"}, f"b{weight}", None) == bit
    assert target_label({**record, "decoder": "direct"}, "1", None) == str(index)
    assert target_label({**record, "decoder": "sets"}, "s8", None) is None  # no rule: no mark


@given(st.text())
def test_json_block_never_closes_its_script_element(text: str) -> None:
    block = str(_json_block({"label": text, text: [text]}))
    assert "<" not in block and ">" not in block and "&" not in block
    assert orjson.loads(block) == {"label": text, text: [text]}


def test_templates_ship_with_the_package() -> None:
    templates = resources.files("analysis.rendering") / "templates"
    for name in ("page.html.j2", "viewer.js", "style.css"):
        assert (templates / name).is_file()
    pyproject = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    assert pyproject["tool"]["setuptools"]["package-data"]["analysis.rendering"] == ["templates/*"]


def test_a_request_leaving_the_page_is_caught(tmp_path: Path) -> None:
    # The guard of the browser tests can fail: a page that loads an image is refused.
    page = tmp_path / "leaky.html"
    page.write_text(
        '<img src="http://127.0.0.1:9/x.png"><script>document.body.dataset.ready=1</script>'
    )
    with chromium() as context:
        opened = open_page(context, page)
        opened.page.wait_for_load_state("load")
    assert opened.refused == ["http://127.0.0.1:9/x.png"]


def test_options_are_read_from_their_texts_for_other_decoders() -> None:
    intervals = ("0 <= x < 0.25", "0.25 <= x < 0.5", "0.5 <= x < 1")
    assert option_holding(Decimal("0.25"), intervals) == 1
    assert option_holding(Decimal("1"), intervals) is None  # outside every option
    assert option_holding(Decimal("0.4375"), ("x <= 0.4375", "x > 0.4375")) == 0
    assert option_holding(Decimal("-3"), ("x < -2", "x >= -2")) == 0
    assert option_holding(Decimal("2"), ("x is one of 1, 2", "x is one of 3, 4")) is None
