"""Exact grids, Algorithm 1's partition, and Proposition 1 for the interval tree.

The tree is driven by an exact reader of the wire text (``interpret`` + ``exact_label``), so
these properties check the decoder, the prompt text and its reading together.
"""

from __future__ import annotations

import bisect
from decimal import Decimal
from fractions import Fraction
from itertools import pairwise

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from harness.errors import ConfigError, GridError
from harness.protocol.cases import SUBJECT
from harness.protocol.decoders import Answer, DirectDecoder, Question, TreeDecoder, make_decoder
from harness.protocol.decoders.tree import tree_depth
from harness.protocol.grid import MAX_OPTIONS, Grid, fmt, partition
from harness.protocol.meaning import exact_label, interpret

EPS = ("0.01", "1", "10000", "0.0625", "0.5", "0.001", "2.5", "0.2")


def ceil_log(n: int, k: int) -> int:
    """ceil(log_k n) in integers: the fewest d with k**d >= n."""
    d, reach = 0, 1
    while reach < n:
        reach *= k
        d += 1
    return d


@st.composite
def grids(draw: st.DrawFn, max_n: int = 10**6) -> Grid:
    """L a decimal (negative too), eps one of a few decimals, N in 1..max_n."""
    places = draw(st.integers(0, 4))
    lo = Decimal(draw(st.integers(-(10**6), 10**6))).scaleb(-places)
    eps = Decimal(draw(st.sampled_from(EPS)))
    n = draw(st.one_of(st.integers(1, min(300, max_n)), st.integers(1, max_n)))
    return Grid(lo, eps, n)


@st.composite
def targets(draw: st.DrawFn, grid: Grid) -> tuple[int, Fraction]:
    """A cell index and an arbitrary rational y inside that cell (often its lower end)."""
    i = draw(st.integers(0, grid.n - 1))
    den = draw(st.integers(1, 997))
    num = draw(st.one_of(st.just(0), st.integers(0, den - 1)))
    return i, Fraction(grid.lo) + Fraction(grid.eps) * (i + Fraction(num, den))


def drive_exact(decoder: TreeDecoder, y: Fraction) -> list[Question]:
    """Answer every question with the label an exact reader of its wire text picks."""
    asked: list[Question] = []
    while not decoder.done:
        for question in decoder.ready():
            wire = question.wire(False)
            meaning = interpret(wire["instructions"], wire["criteria"])
            assert meaning is not None and meaning.kind == "interval"
            decoder.give(question.key, Answer(exact_label(meaning, y)))
            asked.append(question)
    return asked


# ---- partition ---------------------------------------------------------------------------


@given(
    a=st.integers(-(10**6), 10**6),
    size=st.one_of(st.integers(1, 600), st.integers(1, 10**6)),
    k=st.integers(2, 300),
)
def test_partition_covers_the_interval_in_balanced_parts(a: int, size: int, k: int) -> None:
    b = a + size
    cuts = partition(a, b, k)
    assert cuts[0] == a and cuts[-1] == b
    assert len(cuts) - 1 == min(k, size)
    parts = [hi - lo for lo, hi in pairwise(cuts)]
    assert all(p >= 1 for p in parts)
    assert max(parts) - min(parts) <= 1
    assert sum(parts) == size
    # Every index of [a, b) falls in exactly one part.
    for x in {a, b - 1, a + size // 2}:
        j = bisect.bisect_right(cuts, x) - 1
        assert cuts[j] <= x < cuts[j + 1]


@pytest.mark.parametrize("k", [1, 0, -3])
def test_partition_refuses_branching_below_two(k: int) -> None:
    with pytest.raises(GridError, match="at least 2"):
        partition(0, 10, k)


def test_partition_refuses_an_empty_interval() -> None:
    with pytest.raises(GridError, match="at least one cell"):
        partition(5, 5, 10)


# ---- tree depth (Proposition 1) -----------------------------------------------------------


@given(n=st.one_of(st.integers(1, 1000), st.integers(1, 10**6)), k=st.integers(2, 255))
@example(n=10**6, k=2)
@example(n=10**6, k=255)
@example(n=100, k=10)
@example(n=101, k=10)
@example(n=1, k=2)
@example(n=3**5 + 1, k=3)
def test_tree_depth_max_is_ceil_log(n: int, k: int) -> None:
    shallow, deep = tree_depth(n, k)
    assert deep == ceil_log(n, k)
    assert shallow <= deep
    assert (shallow == 0) == (n == 1)


@given(n=st.integers(1, 150), k=st.integers(2, 40))
def test_tree_depth_matches_every_path(n: int, k: int) -> None:
    """Brute force: walk the tree to every cell; the path lengths span tree_depth exactly."""
    grid = Grid(Decimal(0), Decimal(1), n)
    lengths = []
    for i in range(n):
        decoder = TreeDecoder(grid, SUBJECT, k)
        while not decoder.done:
            cuts = partition(decoder.a, decoder.b, k)
            decoder.give("", Answer(str(bisect.bisect_right(cuts, i) - 1)))
        assert decoder.a == i
        lengths.append(len(decoder.trace))
    assert (min(lengths), max(lengths)) == tree_depth(n, k)


# ---- decoding with an exact oracle -----------------------------------------------------------


@given(data=st.data(), grid=grids(), k=st.integers(2, 255))
def test_tree_with_exact_oracle_meets_proposition_1(
    data: st.DataObject, grid: Grid, k: int
) -> None:
    i, y = data.draw(targets(grid))
    decoder = TreeDecoder(grid, SUBJECT, k)
    asked = drive_exact(decoder, y)
    assert len(asked) <= ceil_log(grid.n, k)
    result = decoder.result()
    assert result.rounds == len(asked) == len(result.trace)
    y_hat = Fraction(result.value)
    assert result.value == grid.lo + grid.eps * i
    assert 0 <= y - y_hat < Fraction(grid.eps)
    assert result.cell == (grid.bound(i), grid.bound(i + 1))
    for question in asked:
        assert 1 <= len(question.criteria) <= min(k, MAX_OPTIONS)


@given(data=st.data(), grid=grids(), k=st.integers(2, 255))
def test_tree_returns_a_grid_value_exactly(data: st.DataObject, grid: Grid, k: int) -> None:
    i = data.draw(st.integers(0, grid.n - 1))
    y = Fraction(grid.bound(i))
    decoder = TreeDecoder(grid, SUBJECT, k)
    drive_exact(decoder, y)
    assert Fraction(decoder.result().value) == y
    assert decoder.result().value == grid.bound(i)


# ---- building grids -------------------------------------------------------------------------


@given(grid=grids())
def test_from_range_builds_the_grid_of_its_range(grid: Grid) -> None:
    hi = grid.lo + grid.eps * grid.n
    built = Grid.from_range(str(grid.lo), str(hi), str(grid.eps))
    assert built == grid
    assert built.n == grid.n
    assert built.hi == hi


@given(grid=grids(), extra=st.integers(1, 999))
def test_from_range_refuses_a_range_that_is_not_whole_cells(grid: Grid, extra: int) -> None:
    hi = grid.lo + grid.eps * (grid.n + Decimal(extra) / 1000)
    with pytest.raises(GridError, match="whole number") as info:
        Grid.from_range(grid.lo, hi, grid.eps)
    assert f"eps={fmt(grid.eps)}" in str(info.value)


def test_from_range_names_the_values_when_n_is_not_whole() -> None:
    with pytest.raises(GridError) as info:
        Grid.from_range("0", "1.005", "0.01")
    message = str(info.value)
    assert "100.5" in message and "U=1.005" in message and "eps=0.01" in message


@pytest.mark.parametrize("eps", ["0", "-0.01", "-1"])
def test_from_range_refuses_eps_not_positive(eps: str) -> None:
    with pytest.raises(GridError, match="eps must be a positive number"):
        Grid.from_range("0", "1", eps)


@pytest.mark.parametrize(("lo", "hi"), [("1", "1"), ("2", "1"), ("-49.99", "-50")])
def test_from_range_refuses_an_upper_end_not_above_the_lower(lo: str, hi: str) -> None:
    with pytest.raises(GridError, match="U must be greater than L"):
        Grid.from_range(lo, hi, "0.01")


@pytest.mark.parametrize(
    ("lo", "hi", "eps"),
    [("0", "1", "NaN"), ("0", "1", "abc"), ("0", "Infinity", "1"), ("0", "1E+400", "3")],
)
def test_from_range_refuses_unusable_numbers_with_grid_error(lo: str, hi: str, eps: str) -> None:
    with pytest.raises(GridError):
        Grid.from_range(lo, hi, eps)


@pytest.mark.parametrize("n", [0, -3])
def test_grid_refuses_fewer_than_one_cell(n: int) -> None:
    with pytest.raises(GridError, match="N must be a whole number >= 1"):
        Grid(Decimal(0), Decimal(1), n)


@pytest.mark.parametrize("n", [True, 1.0])
def test_grid_refuses_a_cell_count_that_is_not_an_int(n: object) -> None:
    with pytest.raises(GridError, match="N must be a whole number"):
        Grid(Decimal(0), Decimal(1), n)  # type: ignore[arg-type]


def test_grid_refuses_eps_not_positive() -> None:
    with pytest.raises(GridError, match="eps must be a positive number"):
        Grid(Decimal(0), Decimal(0), 10)


# ---- the 255-option limit and decoder names ------------------------------------------------


def test_direct_refuses_more_than_255_options() -> None:
    with pytest.raises(GridError, match="256 options"):
        DirectDecoder(Grid(Decimal(0), Decimal(1), 256), SUBJECT)
    with pytest.raises(GridError, match="at most 255"):
        make_decoder("direct", Grid(Decimal(0), Decimal(1), 256), SUBJECT)
    assert len(DirectDecoder(Grid(Decimal(0), Decimal(1), 255), SUBJECT).ready()[0].criteria) == 255


def test_tree_refuses_more_than_255_branches() -> None:
    grid = Grid(Decimal(0), Decimal(1), 1000)
    with pytest.raises(GridError, match="at most 255"):
        TreeDecoder(grid, SUBJECT, 256)
    with pytest.raises(GridError, match="at most 255"):
        make_decoder("tree256", grid, SUBJECT)
    assert len(make_decoder("tree255", grid, SUBJECT).ready()[0].criteria) == 255


def test_question_refuses_more_than_255_criteria() -> None:
    criteria = tuple((str(i), str(i)) for i in range(256))
    with pytest.raises(GridError, match="at most 255"):
        Question("1", "pick", criteria)


def test_digits_refuses_more_than_five_index_digits() -> None:
    with pytest.raises(GridError, match="at most 5 digits"):
        make_decoder("digits", Grid(Decimal(0), Decimal(1), 10**6), SUBJECT)


@pytest.mark.parametrize("name", ["tree1", "tree0"])
def test_make_decoder_refuses_trees_below_two(name: str) -> None:
    with pytest.raises(ConfigError, match="K >= 2"):
        make_decoder(name, Grid(Decimal(0), Decimal(1), 100), SUBJECT)


@pytest.mark.parametrize("name", ["tree", "treeX", "Tree10", "tree-2", "nearest", "", "bits "])
def test_make_decoder_refuses_unknown_names(name: str) -> None:
    with pytest.raises(ConfigError, match="unknown decoder") as info:
        make_decoder(name, Grid(Decimal(0), Decimal(1), 100), SUBJECT)
    assert "known decoders" in str(info.value)
