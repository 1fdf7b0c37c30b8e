"""report: decision paths, figures written as SVG and PNG, report.md."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import pytest
from analysis_runs import RunFactory, output_line, true_index
from hypothesis import given
from hypothesis import strategies as st

from analysis import SelectionError, decision_path, load_run, select_path
from analysis.cli import main


def test_decision_path_tree10_elides_around_the_chosen_child() -> None:
    record = output_line(17, "x0.01", "provided", "reversed", "tree10", 37)
    path = decision_path(record)
    assert path.root == ("0.00", "1.00") and path.value == "0.37" and path.target
    first, second = path.levels
    assert (first.k, first.chosen, first.shown) == (10, 3, (2, 3, 4, 5))
    assert (first.elided_before, first.elided_after) == (2, 4)
    assert first.intervals[1] == ("0.30", "0.40")
    assert (second.chosen, second.shown, second.parent) == (7, (6, 7, 8, 9), ("0.30", "0.40"))
    assert second.intervals[1] == ("0.37", "0.38")


def test_decision_path_without_parent_and_k_fields() -> None:
    # A trace with only "interval" (the minimum of the design doc) is rebuilt from K.
    record = output_line(0, "x10000", "arithmetic", "ascending", "tree4", 61)
    for step in record["trace"]:
        del step["parent"], step["k"]
    path = decision_path(record)
    assert [lv.k for lv in path.levels] == [4, 4, 4, 2]
    assert path.levels[0].intervals[path.levels[0].shown.index(path.levels[0].chosen)] == (
        "500000",
        "750000",
    )
    assert path.levels[-1].intervals[path.levels[-1].shown.index(path.levels[-1].chosen)] == (
        "610000",
        "620000",
    )


def test_decision_path_rejects_non_tree_decoders() -> None:
    with pytest.raises(SelectionError, match="not an interval tree"):
        decision_path(output_line(0, "int", "arithmetic", "ascending", "digits", 5))


def test_default_job_is_first_tree10_off_the_int_domain(runs: RunFactory) -> None:
    run = load_run(runs.affine(families=range(2)))
    path = select_path(run, None, "tree10")
    assert path.job == "affine/f0/x0.01/arithmetic/ascending/r0"
    with pytest.raises(SelectionError, match="choose one of: tree2, tree4, tree10"):
        select_path(run, None, "bits")
    with pytest.raises(SelectionError, match="has no tree10 output"):
        select_path(run, "affine/f9/int/arithmetic/ascending/r0", "tree10")


def test_report_writes_figures_and_markdown(
    runs: RunFactory, capsys: pytest.CaptureFixture
) -> None:
    def off(family: int, domain: str, condition: str, order: str, decoder: str) -> int:
        return true_index(family) + (family + len(decoder)) % 3

    run = runs.affine(families=range(6), predict=off)
    out_dir = run.parent / "rep"
    job = "affine/f3/minus50/provided/reversed/r0"
    argv = ["report", str(run), "--out", str(out_dir), "--job", job, "--decoder", "tree2"]
    assert main([*argv, "--bootstrap", "200"]) == 0
    assert "wrote" in capsys.readouterr().out
    for stem in ("share_within5", "nmae", "decision_path"):
        svg, png = out_dir / f"{stem}.svg", out_dir / f"{stem}.png"
        assert svg.stat().st_size > 1000 and png.stat().st_size > 1000
        text = svg.read_text()
        assert "model sim" in text and "suite affine" in text and "SIMULATED" in text
        assert b"model sim" in png.read_bytes()  # the PNG's Title metadata
        assert png.read_bytes().startswith(b"\x89PNG")
    assert job in (out_dir / "decision_path.svg").read_text()
    report = (out_dir / "report.md").read_text()
    assert report.startswith("# NumericJev report — run run · suite affine · model sim")
    assert "![Share of outputs within 5% APE" in report and "(share_within5.svg)" in report
    assert "### Fixed affine-grid evaluation" in report and "### Run facts" in report


def test_report_default_folder_and_real_model_titles(runs: RunFactory) -> None:
    run = runs.affine(families=range(2), simulated=False)
    assert main(["report", str(run), "--bootstrap", "0"]) == 0
    svg = (run / "report" / "nmae.svg").read_text()
    assert "model jev-test" in svg and "SIMULATED" not in svg


def test_report_bad_job_writes_nothing(runs: RunFactory, capsys: pytest.CaptureFixture) -> None:
    run = runs.affine(families=range(1))
    assert main(["report", str(run), "--job", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("numericjev report: error: job 'nope' has no tree10 output")
    assert not (run / "report").exists()
    assert main(["report", str(run), "--decoder", "direct"]) == 2
    assert not Path(run / "report").exists()


def test_a_page_that_fails_midway_leaves_the_earlier_one(
    runs: RunFactory, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    """The page is written as it is made (a 100× run's is 15 MB): a write that fails part
    way (a full disk) leaves the index.html of the report before, and no partial file."""
    run = runs.affine(families=range(1))
    out_dir = run / "report"
    assert main(["report", str(run), "--bootstrap", "0"]) == 0
    before = (out_dir / "index.html").read_bytes()
    assert before.startswith(b"<!DOCTYPE html>") and b'class="rounds"' in before

    def failing(*args: object) -> Iterator[str]:
        yield "<!doctype html>"
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("analysis.rendering.html.run_page", failing)
    assert main(["report", str(run), "--bootstrap", "0"]) == 2
    assert "No space left on device" in capsys.readouterr().err
    assert (out_dir / "index.html").read_bytes() == before
    assert not [p.name for p in out_dir.iterdir() if p.name.startswith(".")]


@given(st.integers(0, 99), st.integers(2, 12), st.sampled_from(["int", "x0.01", "minus50"]))
def test_decision_path_ends_in_the_decoded_cell(index: int, k: int, domain: str) -> None:
    path = decision_path(output_line(0, domain, "arithmetic", "ascending", f"tree{k}", index))
    last = path.levels[-1]
    assert last.intervals[last.shown.index(last.chosen)] == tuple(path.cell)
    target = Decimal(path.target)
    for level in path.levels:
        assert level.chosen in level.shown
        assert min(level.k, 4) <= len(level.shown) <= min(level.k, 4) + 1
        hidden = level.elided_before + level.elided_between + level.elided_after
        assert hidden + len(level.shown) == level.k
        lo, hi = (Decimal(v) for v in level.parent)
        if level.target is None:  # only when the target is outside the parent interval
            assert not lo <= target < hi
        else:  # the marked child is drawn and holds the target
            child = level.intervals[level.shown.index(level.target)]
            assert Decimal(child[0]) <= target < Decimal(child[1])
