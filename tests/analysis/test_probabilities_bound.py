"""The paper's first-divergence bound on hand-made logs: random paths (a property), and the
adversarial cases (the first wrong turn at the deepest level, all wrong at the top, ties,
off-grid and out-of-range targets, read-outs the proof does not cover)."""

from __future__ import annotations

import tempfile
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from probability_logs import LogWriter, Path_, exact_bound_cells, tree_path, true_child

from analysis.loading.probabilities.answers import load_answers
from analysis.statistics.divergence import DivergenceGroup, divergence_groups


def groups(folder: Path) -> tuple[DivergenceGroup, ...]:
    return divergence_groups(load_answers(folder), (), ())


def only(folder: Path) -> DivergenceGroup:
    (group,) = groups(folder)
    return group


def check_bound(group: DivergenceGroup, errors: list[Decimal], first: list[int]) -> None:
    """The table's figures against an independent exact computation from the definition."""
    total, bound_times_n = exact_bound_cells(errors, first, group.n_cells, group.branching)
    assert total <= bound_times_n  # the proposition, exactly
    n = len(errors)
    assert group.n == n
    assert group.mean_error == pytest.approx(float(total) / n, rel=1e-12)
    assert group.bound == pytest.approx(float(bound_times_n) / n, rel=1e-12)
    assert group.holds is True and group.beyond_term == 0
    for row in group.depths:
        assert row.diverged == first.count(row.depth)
        assert row.pr == pytest.approx(first.count(row.depth) / n)
        assert row.w_cells == -(-group.n_cells // group.branching ** (row.depth - 1))


@st.composite
def runs(draw: st.DrawFn) -> tuple[int, int, list[tuple[int, int, list[int], bool]]]:
    """(N, K, outputs): per output a target cell, a fractional offset in tenths, a choice
    list (-1: the true child; else an index, clipped to the children) and off-grid flag."""
    n_cells = draw(st.integers(2, 300))
    k = draw(st.integers(2, 12))
    outputs = draw(
        st.lists(
            st.tuples(
                st.integers(0, n_cells - 1),
                st.integers(0, 9),
                st.lists(st.integers(-1, 11), min_size=12, max_size=12),
                st.booleans(),
            ),
            min_size=1,
            max_size=12,
        )
    )
    return n_cells, k, outputs


@given(runs())
def test_the_bound_holds_on_any_paths(run: tuple[int, int, list]) -> None:
    n_cells, k, outputs = run
    log = LogWriter(Decimal("-5"), Decimal("0.25"), n_cells)
    errors, first = [], []
    for i, (cell, tenths, choices, off_grid) in enumerate(outputs):
        target = log.lower + log.eps * (Decimal(cell) + (Decimal(tenths) / 10 if off_grid else 0))

        def pick(depth: int, a: int, b: int, cuts: list[int], cell: int = cell, choices=choices):
            wanted = choices[(depth - 1) % len(choices)]
            if wanted < 0:
                return true_child(cell)(depth, a, b, cuts)
            return min(wanted, len(cuts) - 2)

        path = tree_path(n_cells, k, pick)
        record = log.tree_output(f"j{i}", f"tree{k}", target, path)
        errors.append(abs(Decimal(record["value"]) - target) / log.eps)
        first.append(first_divergence(path, cell))
    with tempfile.TemporaryDirectory() as tmp:
        check_bound(only(log.write(Path(tmp) / "run")), errors, first)


def first_divergence(path: Path_, cell: int) -> int:
    """The depth of the first selected interval without ``cell`` (0: none), by definition."""
    for depth, (a, b, k, j) in enumerate(path.steps, start=1):
        cuts = [a + (b - a) * i // k for i in range(k + 1)]
        if not cuts[j] <= cell < cuts[j + 1]:
            return depth
    return 0


def test_first_wrong_turn_at_the_deepest_level(tmp_path: Path) -> None:
    log = LogWriter(n_cells=100)
    errors, first = [], []
    for i, cell in enumerate((5, 37, 63, 99)):

        def pick(depth: int, a: int, b: int, cuts: list[int], cell: int = cell) -> int:
            j = true_child(cell)(depth, a, b, cuts)
            return j if b - a > 2 else 1 - j  # the last question: the sibling cell

        path = tree_path(100, 2, pick)
        record = log.tree_output(f"j{i}", "tree2", Decimal(cell), path)
        errors.append(abs(Decimal(record["value"]) - cell))
        first.append(first_divergence(path, cell))
    group = only(log.write(tmp_path / "run"))
    check_bound(group, errors, first)
    assert first == [7, 0, 7, 7]  # 37's last question was a 1-cell-or-2-cell split, kept right
    assert group.depths[-1].diverged == 3 and group.depths[-1].w_cells == 2
    deepest = [r for r in group.depths if r.diverged]
    assert all(r.forced_share == 1.0 for r in deepest)  # the wrong turn forced all of it


def test_all_wrong_at_the_top(tmp_path: Path) -> None:
    # Target in the lowest cell; every answer picks the highest child: |ŷ−y| = N − 1.
    log = LogWriter(n_cells=100)
    path = tree_path(100, 10, lambda depth, a, b, cuts: len(cuts) - 2)
    for i in range(3):
        log.tree_output(f"j{i}", "tree10", Decimal(0), path)
    group = only(log.write(tmp_path / "run"))
    check_bound(group, [Decimal(99)] * 3, [1] * 3)
    assert group.depths[0].pr == 1.0 and group.depths[0].w_cells == 100
    assert group.bound == 101.0 and group.mean_error == 99.0  # tight to within 2 cells
    assert group.depths[0].forced_share == pytest.approx(90 / 99)  # [90, 100): 90 forced


def test_off_grid_target_just_below_a_boundary(tmp_path: Path) -> None:
    # Off-grid target just below a boundary: the wrong turn forces a tenth of a cell.
    log = LogWriter(Decimal(0), Decimal(1), 4)
    wrong = tree_path(4, 2, lambda depth, a, b, cuts: 1)  # [2, 4) then [3, 4)
    log.tree_output("j0", "tree2", Decimal("1.9"), wrong)
    group = only(log.write(tmp_path / "run"))
    check_bound(group, [Decimal("1.1")], [1])
    assert group.depths[0].forced_share == pytest.approx(0.1 / 1.1)


def test_targets_on_boundaries_and_at_the_ends(tmp_path: Path) -> None:
    # y on a cut belongs to the upper child (half-open): picking the lower one is a wrong
    # turn forcing exactly one cell; the first and the last cells are handled too.
    log = LogWriter(n_cells=100)
    errors, first = [], []
    for i, cell in enumerate((50, 0, 99, 25)):
        lower = tree_path(100, 2, lambda depth, a, b, cuts: 0)  # always the lower child
        exact = tree_path(100, 2, true_child(cell))
        for j, path in enumerate((lower, exact)):
            record = log.tree_output(f"j{i}.{j}", "tree2", Decimal(cell), path)
            errors.append(abs(Decimal(record["value"]) - cell))
            first.append(first_divergence(path, cell))
    group = only(log.write(tmp_path / "run"))
    check_bound(group, errors, first)
    assert first[:2] == [1, 0] and errors[:2] == [Decimal(50), 0]  # 50 is not in [0, 50)
    assert first[::2] == [1, 0, 1, 2]  # 25 leaves at depth 2: [0, 25) excludes it
    # At depth 1: y = 50 (forced 1 cell, error 50) and y = 99 (forced 50, error 99).
    assert group.depths[0].forced_share == pytest.approx((1 + 50) / (50 + 99))


def test_outputs_the_proof_does_not_cover_are_named(tmp_path: Path) -> None:
    log = LogWriter(n_cells=100)
    exact = tree_path(100, 10, true_child(42))
    log.tree_output("in", "tree10", Decimal(42), exact)
    log.tree_output("out", "tree10", Decimal(150), exact)  # target outside [0, 100)
    # A probability-weighted read-out: the value is not the final cell's lower endpoint.
    log.tree_output("mean0", "tree10_mean", Decimal(42), exact, value=Decimal("43.5"))
    answers = load_answers(log.write(tmp_path / "run"))
    by_decoder = {g.decoder: g for g in divergence_groups(answers, (), ())}
    tree = by_decoder["tree10"]
    assert tree.n == 1 and tree.excluded == (("target outside [L, U)", 1),)
    assert tree.holds is True
    mean = by_decoder["tree10_mean"]
    assert mean.holds is None and mean.not_covered == "read-out not the final cell's lower endpoint"
    assert mean.depths[0].pr == 0.0  # its path statistics are still there


def test_halving_and_direct_traces_are_paths_too(tmp_path: Path) -> None:
    log = LogWriter(Decimal(0), Decimal("0.0625"), 16)
    target = Decimal("0.375")  # cell 6
    # Adaptive thresholds: each step keeps one part of the previous interval (no parent, k).
    halving = [
        {"round": 1, "choice": "yes", "threshold": "0.4375", "interval": ["0", "0.5"]},
        {"round": 2, "choice": "no", "threshold": "0.1875", "interval": ["0.25", "0.5"]},
        {"round": 3, "choice": "yes", "threshold": "0.3125", "interval": ["0.25", "0.375"]},
        {"round": 4, "choice": "no", "threshold": "0.25", "interval": ["0.3125", "0.375"]},
    ]
    direct = [{"round": 1, "choice": "7", "value": "0.4375"}]
    for decoder, trace, value in (("adaptive", halving, "0.3125"), ("direct", direct, "0.4375")):
        record = log._output("j", decoder, target, Decimal(value), trace, "arithmetic", "a", "c", 0)
        log.raw_output(record)
    found = {g.decoder: g for g in groups(log.write(tmp_path / "run"))}
    assert found["adaptive"].branching == 2 and found["adaptive"].depths[2].diverged == 1
    assert found["adaptive"].holds is True and found["adaptive"].mean_error == 1.0
    assert found["direct"].branching == 16 and found["direct"].bound == 1 + 16
    assert found["direct"].holds is True


def test_traces_that_are_not_paths_are_left_out(tmp_path: Path) -> None:
    log = LogWriter(n_cells=100)
    log.tree_output("j", "tree10", Decimal(1), tree_path(100, 10, true_child(1)))
    bad = dict(log.outputs[0], decoder="digits", trace=[{"round": 1, "choice": "0"}])
    skipped = dict(log.outputs[0], decoder="tree4")
    skipped["trace"] = [dict(skipped["trace"][0], round=2)]  # rounds must run 1, 2, …
    log.raw_output(bad)
    log.raw_output(skipped)
    answers = load_answers(log.write(tmp_path / "run"))
    assert len(answers) == 1 and answers.outputs_read == 3
    assert answers.not_intervals == (("digits", 1), ("tree4", 1))


def test_error_cells_are_exact() -> None:
    # 0.1-cell steps on an eps of 0.03: the loader's Fractions, not floats, decide the term.
    assert Fraction(Decimal("0.09")) / Fraction(Decimal("0.03")) == 3


@given(st.integers(0, 500), st.integers(1, 300), st.integers(2, 255), st.data())
def test_the_true_child_formula_matches_the_partition(a: int, width: int, k: int, data) -> None:
    from bisect import bisect_right

    from analysis.loading.probabilities.interval_steps import Step, tree_cuts, true_option

    k = min(k, width) if width >= 2 else 2
    width = max(width, k)
    b = a + width
    cell = data.draw(st.integers(a - 2, b + 1))
    cuts = tree_cuts(a, b, k)
    step = Step(1, "tree", a, b, k, cuts[0], cuts[1], "0")
    expected = bisect_right(cuts, cell) - 1 if a <= cell < b else -1
    assert true_option(step, cell) == expected
