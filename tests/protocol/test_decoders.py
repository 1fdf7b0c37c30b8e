"""Decoders as state machines: the paper's Figure 2 path, index encodings, order, determinism."""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.backends.oracle import Oracle
from harness.protocol.cases import SUBJECT, Case, JobSpec
from harness.protocol.decoders import Answer, Decoder, Question, make_decoder
from harness.protocol.grid import Grid
from harness.protocol.meaning import exact_label, interpret
from harness.running.jobs import Job
from harness.wire.answers import parse_answers
from suites.affine import DOMAINS

EPS = ("0.01", "1", "10000", "0.0625", "0.5", "0.001", "2.5", "0.2")
AFFINE_GRIDS = [Grid(d.shift, d.eps, 100) for d in DOMAINS]


@st.composite
def grids(draw: st.DrawFn, max_n: int = 10**6) -> Grid:
    """L a decimal (negative too), eps one of a few decimals, N in 1..max_n."""
    places = draw(st.integers(0, 4))
    lo = Decimal(draw(st.integers(-(10**6), 10**6))).scaleb(-places)
    eps = Decimal(draw(st.sampled_from(EPS)))
    n = draw(st.one_of(st.integers(1, min(300, max_n)), st.integers(1, max_n)))
    return Grid(lo, eps, n)


def drive_exact(decoder: Decoder, y: Fraction, reverse: bool = False) -> list[Question]:
    """Answer every ready question as an exact reader of its wire text would."""
    asked: list[Question] = []
    while not decoder.done:
        for question in decoder.ready():
            wire = question.wire(reverse)
            meaning = interpret(wire["instructions"], wire["criteria"])
            assert meaning is not None
            decoder.give(question.key, Answer(exact_label(meaning, y)))
            asked.append(question)
    return asked


def run_with_oracle(job: Job) -> int:
    """Run a job to the end against the in-process oracle; returns the number of requests."""
    oracle, requests = Oracle(), 0
    while (step := job.next_request("oracle")) is not None:
        body, qmap = step
        job.apply(qmap, parse_answers(body["questions"], oracle.respond(body)))
        requests += 1
    return requests


# ---- Figure 2 -------------------------------------------------------------------------------


@pytest.mark.parametrize("order", ["ascending", "reversed"])
@pytest.mark.parametrize("condition", ["arithmetic", "provided"])
def test_figure_2_path(order: str, condition: str) -> None:
    """11 on [0, 100) at eps 0.01 with K = 10: four decisions down to [11, 11.01)."""
    grid = Grid.from_range("0", "100", "0.01")
    assert grid.n == 10_000
    case = Case("fig2", 0, "fig2", {"expression": "10 + 1"}, Fraction(11), grid)
    job = Job(JobSpec("fig2", case, condition, order, 0), ("tree10",))
    assert run_with_oracle(job) == 4
    result = job.decoders["tree10"].result()
    assert result.value == Decimal("11.00")
    assert result.rounds == 4
    intervals = [step["interval"] for step in result.trace]
    assert intervals == [["10", "20"], ["11", "12"], ["11", "11.1"], ["11", "11.01"]]
    assert [step["k"] for step in result.trace] == [10, 10, 10, 10]
    (record,) = job.outputs(simulated=True)
    assert record["value"] == "11.00"
    assert record["cell"] == ["11", "11.01"]
    assert record["status"] == "ok"
    assert record["N"] == 10_000


# ---- index encodings ------------------------------------------------------------------------


@pytest.mark.parametrize("grid", AFFINE_GRIDS, ids=[d.name for d in DOMAINS])
@pytest.mark.parametrize("name", ["digits", "bits", "direct"])
def test_index_decoders_recover_every_index(name: str, grid: Grid) -> None:
    for i in range(100):
        decoder = make_decoder(name, grid, SUBJECT)
        drive_exact(decoder, Fraction(grid.bound(i)), reverse=i % 2 == 1)
        result = decoder.result()
        assert result.value == grid.bound(i)
        if name != "direct":
            assert result.extra["index"] == i


@given(data=st.data(), grid=grids(max_n=100_000), name=st.sampled_from(["digits", "bits"]))
def test_index_decoders_recover_the_cell_of_any_target(
    data: st.DataObject, grid: Grid, name: str
) -> None:
    i = data.draw(st.integers(0, grid.n - 1))
    offset = data.draw(st.fractions(min_value=0, max_value=1).filter(lambda f: f < 1))
    y = Fraction(grid.lo) + Fraction(grid.eps) * (i + offset)
    decoder = make_decoder(name, grid, SUBJECT)
    asked = drive_exact(decoder, y)
    assert decoder.result().value == grid.bound(i)
    assert decoder.result().extra["index"] == i
    if name == "digits":
        assert len(asked) == len(str(grid.n - 1))
        assert decoder.depths() == (len(asked), len(asked))
    else:
        # Independent bits: one question per bit, all in one round.
        assert len(asked) == max(1, (grid.n - 1).bit_length())
        assert decoder.depths() == (1, 1)


def test_bits_keep_codes_above_the_grid() -> None:
    grid = Grid(Decimal(0), Decimal("0.01"), 100)
    decoder = make_decoder("bits", grid, SUBJECT)
    questions = decoder.ready()
    assert len(questions) == 7
    for question in questions:
        decoder.give(question.key, Answer("1"))
    assert decoder.done
    result = decoder.result()
    assert result.extra["index"] == 127
    assert result.value == grid.lo + grid.eps * 127 == Decimal("1.27")
    assert result.cell == (Decimal("1.27"), Decimal("1.28"))
    assert result.trace[0]["choice"] == "1111111"


def test_bits_code_is_kept_in_the_output_record() -> None:
    """Through a job: an index of 127 on a 100-cell grid is reported, not clipped."""
    grid = Grid(Decimal(-50), Decimal(1), 100)
    case = Case("c", 0, "minus50", {"expression": "(3) * 1 + (-50)"}, Fraction(-47), grid)
    job = Job(JobSpec("t", case, "arithmetic", "ascending", 0), ("bits",))
    step = job.next_request("m")
    assert step is not None
    body, qmap = step
    job.apply(qmap, {qid: Answer("1") for qid in body["questions"]})
    assert job.next_request("m") is None
    (record,) = job.outputs(simulated=True)
    assert record["value"] == "77"
    assert record["extra"]["index"] == 127


def test_digits_keep_codes_above_the_grid() -> None:
    grid = Grid(Decimal(0), Decimal(1), 250)
    decoder = make_decoder("digits", grid, SUBJECT)
    for _ in range(3):
        (question,) = decoder.ready()
        decoder.give(question.key, Answer("9"))
    assert decoder.result().extra["index"] == 999
    assert decoder.result().value == Decimal(999)


# ---- option order --------------------------------------------------------------------------

NAMES = ("direct", "tree2", "tree4", "tree10", "digits", "bits")


@pytest.mark.parametrize("name", NAMES)
def test_reversed_order_changes_only_insertion_order(name: str) -> None:
    grid = Grid(Decimal(0), Decimal("0.01"), 100)
    decoder = make_decoder(name, grid, SUBJECT)
    while not decoder.done:
        for question in decoder.ready():
            ascending, reversed_ = question.wire(False), question.wire(True)
            assert ascending["type"] == reversed_["type"] == "choice"
            assert ascending["instructions"] == reversed_["instructions"]
            assert ascending["criteria"] == reversed_["criteria"]  # same label -> description
            assert list(reversed_["criteria"].items()) == list(ascending["criteria"].items())[::-1]
            assert list(ascending["criteria"].items()) == list(question.criteria)
            decoder.give(question.key, Answer(question.criteria[-1][0]))


def test_reversed_job_sends_the_same_questions_in_reversed_order() -> None:
    grid = Grid(Decimal(0), Decimal(1), 100)
    case = Case("c", 0, "int", {"expression": "40 + 2"}, Fraction(42), grid)
    jobs = {
        order: Job(JobSpec("t", case, "arithmetic", order, 0), NAMES)
        for order in ("ascending", "reversed")
    }
    oracle = Oracle()
    while not jobs["ascending"].done:
        steps = {order: job.next_request("m") for order, job in jobs.items()}
        up, down = steps["ascending"], steps["reversed"]
        assert up is not None and down is not None
        assert up[1] == down[1]
        for qid, question in up[0]["questions"].items():
            flipped = down[0]["questions"][qid]
            assert flipped["criteria"] == question["criteria"]
            assert list(flipped["criteria"]) == list(question["criteria"])[::-1]
        for order, job in jobs.items():
            body, qmap = steps[order]  # type: ignore[misc]
            job.apply(qmap, parse_answers(body["questions"], oracle.respond(body)))
    assert jobs["reversed"].done
    values = {
        order: [r["value"] for r in job.outputs(simulated=True)] for order, job in jobs.items()
    }
    assert values["ascending"] == values["reversed"] == ["42"] * len(NAMES)


# ---- determinism -----------------------------------------------------------------------------


@st.composite
def named_grids(draw: st.DrawFn) -> tuple[str, Grid]:
    name = draw(
        st.sampled_from(["direct", "tree2", "tree3", "tree10", "tree255", "digits", "bits"])
    )
    max_n = {"direct": 255, "digits": 100_000}.get(name, 10**6)
    return name, draw(grids(max_n=max_n))


@given(data=st.data(), named=named_grids())
def test_same_answers_give_the_same_questions(data: st.DataObject, named: tuple[str, Grid]) -> None:
    """What resume relies on: replaying the answers rebuilds the same questions."""
    name, grid = named
    first, second = make_decoder(name, grid, SUBJECT), make_decoder(name, grid, SUBJECT)
    while not first.done:
        ready = first.ready()
        assert ready == second.ready()
        assert ready, "an unfinished decoder must have a question to ask"
        for question in ready:
            label = data.draw(st.sampled_from(sorted(question.labels())))
            first.give(question.key, Answer(label))
            second.give(question.key, Answer(label))
    assert second.done
    assert second.ready() == first.ready() == []
    assert first.result() == second.result()
    shallow, deep = first.depths()
    assert shallow <= first.result().rounds <= deep


@pytest.mark.parametrize("name", ["tree02", "tree0", "tree1", "tree", "treeK"])
def test_make_decoder_refuses_malformed_tree_names(name: str) -> None:
    from harness.errors import ConfigError
    from harness.protocol.decoders import make_decoder
    from harness.protocol.grid import Grid

    with pytest.raises(ConfigError):
        make_decoder(name, Grid(Decimal(0), Decimal(1), 100), "Determine x.")
