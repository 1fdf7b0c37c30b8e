"""The exploratory and historical suites' own tables, on small hand-computed runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from analysis_runs import RunFactory, grid_line

from analysis import (
    analyze_run,
    build_tables,
    decoder_label,
    load_run,
    order_decoders,
    threshold_decreases,
)
from analysis.cli import main

NOTICE = "SIMULATED MODEL — not a measurement of any real model"
ORDERS = ("ascending", "reversed")
JOBS = [(order, repeat) for order in ORDERS for repeat in (0, 1)]  # 4 outputs per question


def cells(markdown: str, title: str, label: str) -> list[str]:
    """The cells of the row starting with ``label`` in the table titled ``title``."""
    section = markdown[markdown.index(f"### {title}") :]
    for line in section.splitlines():
        row = [c.strip() for c in line.strip().strip("|").split("|")]
        if row[0] == label:
            return row
    raise AssertionError(f"no row {label!r} under {title!r}")


def analyze(capsys: pytest.CaptureFixture, run: Path, *options: str) -> str:
    assert main(["analyze", str(run), *options]) == 0
    return capsys.readouterr().out


# --- exploratory ------------------------------------------------------------------------

# Integer question 1 + 1 (target 2, grid 0..15) and fraction question 1/4 (grid of 1/16),
# each asked in two orders × two repeats. Direct answers, in JOBS order:
#   integer  2, 2, 3, 3      -> APE 0, 0, 50, 50 -> MAPE 25
#   fraction 1/4, 1/4, 5/16, 3/16 -> APE 0, 0, 25, 25 -> MAPE 12.5
#   overall (0 + 0 + 50 + 50 + 0 + 0 + 25 + 25) / 8 = 18.75
# A two-family bootstrap replicate is 25 (integer twice), 12.5 (fraction twice) or 18.75,
# each end with probability 1/4: the "95% interval" would be [12.50, 25.00], i.e. the range
# of the two questions. Fewer than five families give no interval at all.
DIRECT = {0: ("2", "2", "3", "3"), 6: ("0.25", "0.25", "0.3125", "0.1875")}
QUESTIONS = {0: ("int", "2", "1"), 6: ("fraction", "0.25", "0.0625")}
# Jobs whose raw threshold answers decreased, per decoder (family, order, repeat). Repeat
# r1 of family 0 copies r0's answers, as a deterministic model would: still two jobs.
DECREASED = {
    "parallel_thresholds": {(0, "ascending", 0), (0, "ascending", 1), (6, "reversed", 0)},
    "threshold_cdf": {(6, "reversed", 0)},
}


def exploratory_lines(failed: tuple[int, str, int] | None = None) -> list[dict[str, Any]]:
    """Direct, tree4 (exact) and two threshold decoders (exact, with flags) on both questions;
    ``failed`` makes that job's parallel_thresholds output failed without a flag."""
    lines = []
    for family, (domain, target, eps) in QUESTIONS.items():
        for j, (order, repeat) in enumerate(JOBS):
            args = ("exploratory", family, domain, "arithmetic", order, repeat)
            grid = {"eps": eps}
            lines.append(grid_line(*args, "direct", target, DIRECT[family][j], **grid))
            lines.append(grid_line(*args, "tree4", target, target, **grid))
            for decoder, flagged in DECREASED.items():
                flag = {"decreased": (family, order, repeat) in flagged}
                if decoder == "parallel_thresholds" and failed == (family, order, repeat):
                    lines.append(grid_line(*args, decoder, target, None, **grid))
                else:
                    lines.append(grid_line(*args, decoder, target, target, extra=flag, **grid))
    return lines


def write_exploratory(runs: RunFactory, name: str, lines: list[dict[str, Any]]) -> Path:
    decoders = ["direct", "tree4", "parallel_thresholds", "threshold_cdf"]
    return runs.write(
        name,
        lines,
        suite="exploratory",
        decoders=decoders,
        conditions=["arithmetic"],
        repeats=2,
        n_cases=2,
        n_jobs=8,
    )


def test_exploratory_names_follow_the_paper() -> None:
    assert decoder_label("direct", "exploratory") == "Direct 16-value"
    assert decoder_label("tree4", "exploratory") == "Four-way intervals"
    assert decoder_label("actual_digits", "exploratory") == "Decimal digits"
    assert decoder_label("bits4", "exploratory") == "Independent bits"
    assert decoder_label("threshold_cdf", "exploratory") == "Threshold CDF"
    # The affine suite (and no suite) keeps its own labels.
    assert decoder_label("direct") == decoder_label("direct", "affine") == "Direct values"
    assert decoder_label("tree4", "affine") == "Tree (K=4)"
    shuffled = ["threshold_cdf", "bits4", "parallel_thresholds", "tree4", "direct", "other"]
    shuffled += ["adaptive_thresholds", "actual_digits", "sets"]
    assert order_decoders(shuffled, "exploratory") == (
        "direct",
        "tree4",
        "sets",
        "actual_digits",
        "adaptive_thresholds",
        "parallel_thresholds",
        "bits4",
        "threshold_cdf",
        "other",
    )
    assert order_decoders(["tree4", "direct"], "affine") == ("direct", "tree4")


def test_exploratory_table_by_domain(runs: RunFactory, capsys: pytest.CaptureFixture) -> None:
    out = analyze(capsys, write_exploratory(runs, "e", exploratory_lines()), "--bootstrap", "2000")
    title = "Exploratory arithmetic MAPE (%) — model sim · suite exploratory — " + NOTICE
    assert f"### {title}" in out
    assert cells(out, title, "Decoder") == ["Decoder", "Integer", "Fraction", "Overall", "n"]
    assert cells(out, title, "Direct 16-value") == [
        "Direct 16-value",
        "25.00",
        "12.50",
        "18.75",
        "8",
    ]
    assert "No brackets: only 2 families to resample (fewer than 5)" in out
    exact = ["0.00", "0.00", "0.00", "8"]
    assert cells(out, title, "Four-way intervals")[1:] == exact
    assert cells(out, title, "Threshold CDF")[1:] == exact
    # Rows in the paper's order; the by-domain generic table is superseded.
    rows = [line.split("|")[1].strip() for line in out[out.index(title) :].splitlines()[4:8]]
    assert rows == [
        "Direct 16-value",
        "Four-way intervals",
        "Parallel thresholds",
        "Threshold CDF",
    ]
    assert "MAPE by domain" not in out
    assert "Affine gap" not in out  # fraction questions are not transforms of integer ones


def test_threshold_decrease_counts(runs: RunFactory, capsys: pytest.CaptureFixture) -> None:
    lines = exploratory_lines()
    # The harness wrote one job's line twice; the last (not decreased) wins, so 3 -> 2.
    job = "exploratory/f0/int/arithmetic/ascending/r1"
    first = next(
        line for line in lines if (line["job"], line["decoder"]) == (job, "parallel_thresholds")
    )
    lines.append({**first, "extra": {"decreased": False}})
    lines.insert(0, {**first, "extra": {"decreased": True}})
    run = write_exploratory(runs, "e", lines)
    a = analyze_run(load_run(run), n_boot=0)
    found = {t.decoder: t for t in threshold_decreases(a.run.outputs, a.design.decoders)}
    assert set(found) == {"parallel_thresholds", "threshold_cdf"}  # only flagged decoders
    assert (found["parallel_thresholds"].decreased, found["parallel_thresholds"].groups) == (2, 8)
    assert (found["threshold_cdf"].decreased, found["threshold_cdf"].groups) == (1, 8)
    out = analyze(capsys, run, "--bootstrap", "0")
    title = (
        "Threshold query groups that decreased before projection — model sim · suite exploratory"
    )
    assert cells(out, title, "Parallel thresholds") == ["Parallel thresholds", "2 of 8", "25.00"]
    assert cells(out, title, "Threshold CDF") == ["Threshold CDF", "1 of 8", "12.50"]
    assert "Repeats send identical requests" in out


def test_threshold_decreases_skip_unflagged_jobs(
    runs: RunFactory, capsys: pytest.CaptureFixture
) -> None:
    # A failed output carries no flag: it is neither decreased nor one of the n groups.
    run = write_exploratory(runs, "e", exploratory_lines(failed=(6, "reversed", 0)))
    out = analyze(capsys, run, "--bootstrap", "0")
    title = "Threshold query groups that decreased before projection"
    assert cells(out, title, "Parallel thresholds")[1] == "2 of 7"
    assert "Not counted (no recorded flag, e.g. failed): Parallel thresholds 1 job(s)." in out
    mape = "Exploratory arithmetic MAPE (%)"
    assert cells(out, mape, "Decoder")[-1] == "n ok/failed/missing"
    assert cells(out, mape, "Parallel thresholds")[-1] == "7/1/0"


def test_exploratory_json_and_report(runs: RunFactory, capsys: pytest.CaptureFixture) -> None:
    run = write_exploratory(runs, "e", exploratory_lines())
    data = orjson.loads(analyze(capsys, run, "--json", "--bootstrap", "2000"))
    direct = data["suite_tables"]["exploratory_mape"]["arithmetic"][0]
    assert direct["decoder"] == "direct" and direct["label"] == "Direct 16-value"
    assert direct["mape_by_domain"] == {"int": 25.0, "fraction": 12.5}
    assert direct["mape"] == {"value": 18.75, "lo": None, "hi": None}
    assert data["bootstrap"]["intervals_refused"].startswith("only 2 families to resample")
    assert (direct["n_ok"], direct["n_failed"], direct["n_missing"]) == (8, 0, 0)
    assert data["suite_tables"]["threshold_decreases"]["parallel_thresholds"] == {
        "label": "Parallel thresholds",
        "decreased": 3,
        "groups": 8,
        "unrecorded": 0,
    }
    # report draws the run's widest tree (tree4) when it has no tree10.
    assert main(["report", str(run), "--bootstrap", "0"]) == 0
    report = (run / "report" / "report.md").read_text()
    assert (
        f"### Exploratory arithmetic MAPE (%) — model sim · suite exploratory — {NOTICE}" in report
    )
    assert "### Threshold query groups that decreased before projection" in report
    assert "Decision path of tree4" in report


# --- historical ---------------------------------------------------------------------------

# Two dates on [0, 10000) at 0.01. Recall answers in JOBS order:
#   2019-12-31, reference 2000: 2100, 1900, 2100, 2300 -> APE 5, 5, 5, 15 -> "5.00–15.00%"
#   2023-12-29, reference 4000: 4200, 4200, 4200, 3800 -> APE 5, 5, 5, 5 -> "5.00%"
# Mean 50/8 = 6.25, median of (5 ×7, 15) = 5, maximum 15; 6 of 8 above the reference.
# Provided answers are the reference: 0% everywhere.
RECALL = {0: ("2100", "1900", "2100", "2300"), 1: ("4200", "4200", "4200", "3800")}
DATES = {0: ("2019-12-31", "2000"), 1: ("2023-12-29", "4000")}


def historical_run(
    runs: RunFactory, suite: str = "historical", decoder: str = "tree10", drop_last: bool = False
) -> Path:
    lines = []
    for family, (date, reference) in DATES.items():
        for j, (order, repeat) in enumerate(JOBS):
            for condition, value in (("recall", RECALL[family][j]), ("provided", reference)):
                if drop_last and (family, j, condition) == (1, 3, "recall"):
                    value = None  # a failed output
                lines.append(
                    grid_line(
                        suite,
                        family,
                        date,
                        condition,
                        order,
                        repeat,
                        decoder,
                        reference,
                        value,
                        eps="0.01",
                        n_cells=1_000_000,
                    )
                )
    return runs.write(
        suite,
        lines,
        suite=suite,
        decoders=[decoder],
        conditions=["recall", "provided"],
        repeats=2,
        n_cases=2,
        n_jobs=16,
    )


def test_historical_readout(runs: RunFactory, capsys: pytest.CaptureFixture) -> None:
    out = analyze(capsys, historical_run(runs), "--bootstrap", "0")
    title = "Historical index readout, Tree (K=10) — model sim · suite historical — " + NOTICE
    assert f"### {title}" in out
    assert cells(out, title, "Date") == [
        "Date",
        "Reference",
        "Recall APE",
        "Provided APE",
        "n Recall",
        "n Provided",
    ]
    assert cells(out, title, "2019-12-31") == [
        "2019-12-31",
        "2000",
        "5.00–15.00%",
        "0.00%",
        "4",
        "4",
    ]
    assert cells(out, title, "2023-12-29") == ["2023-12-29", "4000", "5.00%", "0.00%", "4", "4"]
    assert cells(out, title, "Mean") == ["Mean", "", "6.25%", "0.00%", "8", "8"]
    assert cells(out, title, "Median") == ["Median", "", "5.00%", "0.00%", "", ""]
    assert cells(out, title, "Maximum") == ["Maximum", "", "15.00%", "0.00%", "", ""]
    assert "Above the reference: Recall 6 of 8; Provided 0 of 8" in out
    assert "MAPE by domain" not in out  # superseded by the readout
    # Recall before provided in the generic table as well.
    assert cells(out, "Historical evaluation", "Decoder")[1:3] == ["MAPE Recall", "MAPE Provided"]


def test_historical_failed_output_and_json(runs: RunFactory, capsys: pytest.CaptureFixture) -> None:
    # The 3800 answer fails: 7 recall outputs, APE sum 45, mean 6.43, median 5, max 15, all
    # six answers above the reference still above it.
    run = historical_run(runs, drop_last=True)
    out = analyze(capsys, run, "--bootstrap", "0")
    title = "Historical index readout"
    assert cells(out, title, "2023-12-29")[2:6] == ["5.00%", "0.00%", "3 (+1 failed)", "4"]
    assert cells(out, title, "Mean")[2:6] == ["6.43%", "0.00%", "7 (+1 failed)", "8"]
    data = orjson.loads(analyze(capsys, run, "--json", "--bootstrap", "0"))
    readout = data["suite_tables"]["history"]["tree10"]
    assert [d["date"] for d in readout["dates"]] == ["2019-12-31", "2023-12-29"]
    first = readout["dates"][0]
    assert first["reference"] == "2000"
    assert first["ape"]["recall"] == {
        "n": 4,
        "n_failed": 0,
        "min": pytest.approx(5.0),
        "max": pytest.approx(15.0),
        "mean": pytest.approx(7.5),
        "median": pytest.approx(5.0),
        "above_reference": 3,
    }
    recall = readout["overall"]["recall"]
    assert (recall["n"], recall["n_failed"], recall["above_reference"]) == (7, 1, 6)
    assert recall["mean"] == pytest.approx(45 / 7) and recall["max"] == pytest.approx(15.0)
    assert readout["overall"]["provided"]["max"] == 0.0


def test_binary_follow_up_is_its_own_suite(runs: RunFactory, capsys: pytest.CaptureFixture) -> None:
    run = historical_run(runs, suite="historical_binary", decoder="tree2")
    a = analyze_run(load_run(run), n_boot=0)
    first = build_tables(a)[0]
    assert first.title == (
        "Historical index readout, Tree (K=2) — model sim · suite historical_binary — " + NOTICE
    )
    assert "Suite historical_binary only" in first.to_markdown()
    # report draws tree2 (the only tree) and carries the readout.
    assert main(["report", str(run), "--bootstrap", "0"]) == 0
    report = (run / "report" / "report.md").read_text()
    assert (
        "### Historical index readout, Tree (K=2) — model sim · suite historical_binary" in report
    )
    assert NOTICE in report


def test_historical_tables_show_dates_not_an_interval(
    runs: RunFactory, capsys: pytest.CaptureFixture
) -> None:
    # Two dates are two families: a "95% interval" would only restate their range. The
    # values per date (2019-12-31, then 2023-12-29) stand in brackets' place instead.
    out = analyze(capsys, historical_run(runs), "--bootstrap", "2000")
    main_title, within5 = "Historical evaluation", "Outputs within 5% APE"
    assert cells(out, main_title, "Tree (K=10)")[1:3] == [
        "6.25 (7.50 / 5.00)",
        "0.00 (0.00 / 0.00)",
    ]
    assert cells(out, within5, "Tree (K=10)")[1:3] == [
        "87.50 (75.00 / 100.00)",
        "100.00 (100.00 / 100.00)",
    ]
    section = out[out.index(f"### {main_title}") : out.index(f"### {within5}")]
    assert "[" not in section
    assert "No brackets: only 2 families to resample (fewer than 5)" in section
    assert "Parentheses: the value on each date (2019-12-31, 2023-12-29)" in section
    data = orjson.loads(analyze(capsys, historical_run(runs, suite="historical_binary"), "--json"))
    assert data["bootstrap"]["intervals_refused"].startswith("only 2 families")
    assert all(c["mape"]["lo"] is None and c["mape"]["hi"] is None for c in data["cells"])
