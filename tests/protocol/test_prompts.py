"""The paper's prompt text (Appendix "Complete Prompt Specification") and its exact reading.

Criteria are the only place numbers reach the model, so their text must name the exact
bounds ``L + eps * t_j``: no exponents, no trailing zeros, no float artefacts.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from decimal import Decimal
from fractions import Fraction

from hypothesis import given
from hypothesis import strategies as st

from harness.protocol.cases import SUBJECT
from harness.protocol.decoders import Answer, Question, TreeDecoder, make_decoder
from harness.protocol.grid import Grid, fmt, partition
from harness.protocol.meaning import Meaning, exact_label, interpret
from harness.protocol.prompts import DIRECT, TREE

EPS = ("0.01", "1", "10000", "0.0625", "0.5", "0.001", "2.5", "0.2")
# A canonical decimal: optional sign, no leading zeros, no exponent, no trailing zeros.
CANONICAL = r"-?(?:0|[1-9]\d*)(?:\.\d*[1-9])?"
CRITERION = re.compile(rf"^({CANONICAL}) <= x < ({CANONICAL})$")


@st.composite
def grids(draw: st.DrawFn, max_n: int = 10**6) -> Grid:
    """L a decimal (negative too), eps one of a few decimals, N in 1..max_n."""
    places = draw(st.integers(0, 4))
    lo = Decimal(draw(st.integers(-(10**6), 10**6))).scaleb(-places)
    eps = Decimal(draw(st.sampled_from(EPS)))
    n = draw(st.one_of(st.integers(2, min(300, max_n)), st.integers(2, max_n)))
    return Grid(lo, eps, n)


def questions_on_path(grid: Grid, k: int, y: Fraction) -> list[Question]:
    """The tree's questions on the exact path to ``y``."""
    decoder = TreeDecoder(grid, SUBJECT, k)
    asked = []
    while not decoder.done:
        (question,) = decoder.ready()
        wire = question.wire(False)
        meaning = interpret(wire["instructions"], wire["criteria"])
        assert meaning is not None
        decoder.give(question.key, Answer(exact_label(meaning, y)))
        asked.append(question)
    return asked


@given(data=st.data(), grid=grids(), k=st.integers(2, 255))
def test_tree_criteria_read_back_to_the_exact_bounds(
    data: st.DataObject, grid: Grid, k: int
) -> None:
    """Along any path (random labels), every criterion parses to L + eps*t_j exactly."""
    decoder = TreeDecoder(grid, SUBJECT, k)
    lo, eps = Fraction(grid.lo), Fraction(grid.eps)
    while not decoder.done:
        (question,) = decoder.ready()
        cuts = partition(decoder.a, decoder.b, k)
        wire = question.wire(data.draw(st.booleans()))
        meaning = interpret(wire["instructions"], wire["criteria"])
        assert meaning is not None and meaning.kind == "interval"
        expected = {
            str(j): (lo + eps * cuts[j], lo + eps * cuts[j + 1]) for j in range(len(cuts) - 1)
        }
        assert meaning.options == expected
        for text in wire["criteria"].values():
            match = CRITERION.match(text)
            assert match is not None, text
            for number in match.groups():
                assert number == fmt(Decimal(number))
        label = data.draw(st.sampled_from(sorted(question.labels())))
        decoder.give(question.key, Answer(label))


def criteria_texts(questions: list[Question]) -> list[list[str]]:
    return [[text for _, text in q.criteria] for q in questions]


def test_exact_criterion_strings_appear_in_the_right_questions() -> None:
    hundredths = criteria_texts(
        questions_on_path(Grid(Decimal(0), Decimal("0.01"), 100), 10, Fraction(11, 100))
    )
    assert "0.1 <= x < 0.2" in hundredths[0]
    assert "0.11 <= x < 0.12" in hundredths[1]
    assert "0.11 <= x < 0.12" not in hundredths[0]

    shifted = criteria_texts(questions_on_path(Grid(Decimal(-50), Decimal(1), 100), 10, -50))
    assert shifted[0][0] == "-50 <= x < -40"
    assert "-50 <= x < -49" in shifted[1]
    assert "-10 <= x < 0" in shifted[0]

    scaled = criteria_texts(
        questions_on_path(Grid(Decimal(0), Decimal(10000), 100), 10, Fraction(110000))
    )
    assert "100000 <= x < 200000" in scaled[0]
    assert "110000 <= x < 120000" in scaled[1]
    assert "110000 <= x < 120000" not in scaled[0]
    for texts in hundredths + shifted + scaled:
        for text in texts:
            assert CRITERION.match(text), text


def test_fmt_writes_plain_decimals() -> None:
    assert fmt(Decimal("110000")) == "110000"
    assert fmt(Decimal("1.1E+5")) == "110000"
    assert fmt(Decimal("0.110")) == "0.11"
    assert fmt(Decimal("-50.00")) == "-50"
    assert fmt(Decimal("0.0625")) == "0.0625"
    assert fmt(Decimal("0.1") + Decimal("0.2")) == "0.3"


def test_tree_prompt_is_the_papers() -> None:
    grid = Grid(Decimal(0), Decimal(1), 100)
    texts = {make_decoder(f"tree{k}", grid, SUBJECT).ready()[0].instructions for k in (2, 4, 10)}
    # Identical for K = 2, 4, 10: only the intervals vary.
    assert texts == {
        "Determine the numerical result x of the expression in state. Select the interval "
        "containing x. Include the lower bound and exclude the upper bound. Labels identify "
        "intervals, not numerical answers."
    }
    assert TREE in next(iter(texts))


def test_direct_prompt_lists_every_grid_value() -> None:
    grid = Grid(Decimal(0), Decimal("0.01"), 100)
    (question,) = make_decoder("direct", grid, SUBJECT).ready()
    assert question.instructions == f"{SUBJECT} {DIRECT}"
    assert [label for label, _ in question.criteria] == [str(i) for i in range(100)]
    assert question.criteria[11] == ("11", "0.11")
    assert question.criteria[99] == ("99", "0.99")
    meaning = interpret(question.instructions, dict(question.criteria))
    assert meaning is not None and meaning.kind == "value"
    assert meaning.options["11"] == (Fraction(11, 100), Fraction(11, 100))


def test_digit_prompts_are_the_papers() -> None:
    grid = Grid(Decimal(-50), Decimal(1), 100)
    decoder = make_decoder("digits", grid, SUBJECT)
    (first,) = decoder.ready()
    assert first.instructions == (
        f"{SUBJECT} Let q = (x - (-50)) / 1, an integer from 0 through 99. Write q with exactly "
        "two decimal digits, including a leading zero if needed. Select the tens digit of q."
    )
    assert [label for label, _ in first.criteria] == [str(d) for d in range(10)]
    assert first.criteria[3] == ("3", "the tens digit of q is 3")
    decoder.give(first.key, Answer("3"))
    (second,) = decoder.ready()
    assert "The tens digit of q is 3. Select the units digit of q." in second.instructions
    meaning = interpret(second.instructions, dict(second.criteria))
    assert meaning is not None
    assert (meaning.kind, meaning.lo, meaning.eps, meaning.last, meaning.power) == (
        "digit",
        Fraction(-50),
        Fraction(1),
        99,
        1,
    )


def test_bit_prompts_are_the_papers() -> None:
    grid = Grid(Decimal(0), Decimal("0.01"), 100)
    questions = make_decoder("bits", grid, SUBJECT).ready()
    assert [q.key for q in questions] == ["b64", "b32", "b16", "b8", "b4", "b2", "b1"]
    first = questions[0]
    assert "Let q = (x - 0) / 0.01, an integer from 0 through 99." in first.instructions
    assert "seven unsigned binary bits with weights 64, 32, 16, 8, 4, 2, 1." in first.instructions
    assert "which equals floor(q / 64) modulo 2" in first.instructions
    assert "Labels are the literal bit values 0 and 1, not option positions." in first.instructions
    assert first.criteria == (
        ("0", "the bit of weight 64 is 0"),
        ("1", "the bit of weight 64 is 1"),
    )
    for question in questions:
        meaning = interpret(question.instructions, dict(question.criteria))
        assert meaning is not None and meaning.kind == "bit"
        assert meaning.power == int(question.key[1:])


@given(grid=grids(max_n=100_000))
def test_index_definition_reads_back_exactly(grid: Grid) -> None:
    for name in ("digits", "bits"):
        question = make_decoder(name, grid, SUBJECT).ready()[0]
        meaning = interpret(question.instructions, dict(question.criteria))
        assert meaning is not None
        assert meaning.lo == Fraction(grid.lo)
        assert meaning.eps == Fraction(grid.eps)
        assert meaning.last == grid.n - 1


def test_interpret_declines_foreign_questions() -> None:
    assert interpret("Is this spam?", {"yes": "it is", "no": "it is not"}) is None
    assert interpret("Pick one.", {"0": "0 <= x < 1", "1": "one or more"}) is None


def _exact_reference(meaning: Meaning, x: Fraction) -> str:
    """``exact_label`` for interval and value meanings with Fractions only (no floats)."""
    ranked = meaning.ranked
    i = bisect_right(meaning.lows, x) - 1
    if meaning.kind == "value":
        return ranked[max(i, 0)][1]
    if i >= 0 and x < meaning.options[ranked[i][1]][1]:
        return ranked[i][1]
    opts = meaning.options
    return min(opts, key=lambda lab: min(abs(x - opts[lab][0]), abs(x - opts[lab][1])))


@given(
    cuts=st.lists(st.fractions(), min_size=2, max_size=8, unique=True),
    x=st.fractions(),
    nudge=st.sampled_from([Fraction(0), Fraction(1, 10**18), Fraction(-1, 10**18)]),
    kind=st.sampled_from(["interval", "value"]),
)
def test_exact_label_float_shortcuts_never_change_the_exact_answer(
    cuts: list[Fraction], x: Fraction, nudge: Fraction, kind: str
) -> None:
    # Floats only settle comparisons whose gap is far beyond rounding: on a bound, just
    # beside one (1e-18 away), or anywhere, the label is the exact one.
    cuts.sort()
    if kind == "interval":
        options = {str(j): (cuts[j], cuts[j + 1]) for j in range(len(cuts) - 1)}
    else:
        options = {str(j): (c, c) for j, c in enumerate(cuts)}
    meaning = Meaning.ordered(kind, options)
    for target in (x, *(c + nudge for c in cuts)):
        assert exact_label(meaning, target) == _exact_reference(meaning, target)
