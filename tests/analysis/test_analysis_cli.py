"""The analyze command: tables, JSON, simulated marks and one-line errors on bad input."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from analysis_runs import SKIP, RunFactory, exact, output_line

from analysis import Table, analyze_run, build_tables, load_run, register_tables
from analysis.cli import main

NOTICE = "SIMULATED MODEL — not a measurement of any real model"


def run_cli(capsys: pytest.CaptureFixture, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def table_row(out: str, title: str, label: str) -> list[str]:
    """The cells of the row starting with ``label`` in the table titled ``title``."""
    section = out[out.index(f"### {title}") :]
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells[0] == label:
            return cells
    raise AssertionError(f"no row {label!r} under {title!r}")


def test_analyze_prints_the_paper_tables(runs: RunFactory, capsys: pytest.CaptureFixture) -> None:
    path = runs.affine(families=range(6))
    code, out, err = run_cli(capsys, "analyze", str(path), "--bootstrap", "200")
    assert code == 0 and err == ""
    for title in (
        "### Fixed affine-grid evaluation — model sim · suite affine — " + NOTICE,
        "### Arithmetic MAPE by affine domain (%)",
        "### Provided MAPE by affine domain (%)",
        "### Sensitivity as a percentage of the numerical range",
        "### Paired differences vs direct (percentage points)",
        "### Outputs within 5% APE (%)",
        "### Run facts",
    ):
        assert title in out
    assert out.count(NOTICE) >= 8  # banner and every table title
    main_row = table_row(out, "Fixed affine-grid evaluation", "Tree (K=10)")
    counts = ["48/0/0"] * 2  # outputs ok/failed/missing per condition, always in the main table
    assert main_row == ["Tree (K=10)", *["0.00 [0.00, 0.00]"] * 4, "2", *counts]
    domain_header = table_row(out, "Arithmetic MAPE by affine domain", "Decoder")
    assert domain_header == ["Decoder", "Integer", "×0.01", "−50", "×10⁴"]
    sensitivity = table_row(out, "Sensitivity as a percentage", "Decoder")
    assert sensitivity[1:] == [
        f"{gap} {cond}"
        for gap in ("Ordering gap", "Affine gap")
        for cond in ("Arithmetic", "Provided")
    ]
    # Nothing failed or missing: the other tables leave the counts out; no warning banner.
    assert table_row(out, "Outputs within 5% APE", "Decoder") == [
        "Decoder",
        "Arithmetic",
        "Provided",
    ]
    assert "Warning" not in out


def test_real_model_has_no_simulated_mark(runs: RunFactory, capsys: pytest.CaptureFixture) -> None:
    path = runs.affine(families=range(2), simulated=False)
    code, out, _ = run_cli(capsys, "analyze", str(path), "--bootstrap", "0")
    assert code == 0 and "SIMULATED" not in out and "model jev-test" in out


def test_failed_and_missing_counts_are_shown(
    runs: RunFactory, capsys: pytest.CaptureFixture
) -> None:
    def predict(family: int, domain: str, condition: str, order: str, decoder: str):
        if (family, domain, order, decoder) == (0, "int", "ascending", "bits"):
            return None if condition == "arithmetic" else SKIP
        return exact(family, domain, condition, order, decoder)

    code, out, _ = run_cli(capsys, "analyze", str(runs.affine(families=range(2), predict=predict)))
    assert code == 0
    assert "n arithmetic ok/failed/missing" in out and "n provided ok/failed/missing" in out
    assert table_row(out, "Fixed affine-grid evaluation", "Index bits")[-2:] == ["15/1/0", "15/0/1"]
    for title in ("Outputs within 5% APE", "Sensitivity as a percentage"):
        assert table_row(out, title, "Index bits")[-2:] == ["15/1/0", "15/0/1"]
    # Paired differences count the jobs where both bits and direct are ok.
    assert table_row(out, "Paired differences", "Decoder")[-2:] == ["n Arithmetic", "n Provided"]
    assert table_row(out, "Paired differences", "Index bits")[-2:] == ["15", "15"]
    assert table_row(out, "Paired differences", "Tree (K=2)")[-2:] == ["16", "16"]
    assert table_row(out, "Arithmetic MAPE by affine domain", "Index bits")[-1] == "15/1/0"
    assert table_row(out, "Provided MAPE by affine domain", "Index bits")[-1] == "15/0/1"
    assert table_row(out, "Run facts", "Outputs ok / failed / missing")[1] == "190 / 1 / 1"


def test_json_has_the_same_numbers(runs: RunFactory, capsys: pytest.CaptureFixture) -> None:
    def off(family: int, domain: str, condition: str, order: str, decoder: str) -> int:
        return exact(family, domain, condition, order, decoder) + (family % 3)

    path = runs.affine(families=range(6), predict=off)
    code, out, _ = run_cli(capsys, "analyze", str(path), "--json", "--bootstrap", "300")
    assert code == 0
    data = orjson.loads(out)
    assert data["run"]["simulated"] is True and data["run"]["notice"] == NOTICE
    assert data["bootstrap"] == {
        "replicates": 300,
        "seed": 20260923,
        "level": 0.95,
        "method": "percentile",
        "resampled_unit": "family",
        "n_families": 6,
        "min_families": 5,
        "intervals_refused": None,
        "paired_reference": "direct",
        "paired_units": "jobs where both the decoder and direct are ok",
    }
    a = analyze_run(load_run(path), n_boot=300)
    cell = next(c for c in data["cells"] if (c["decoder"], c["condition"]) == ("tree4", "provided"))
    assert cell["mape"]["value"] == pytest.approx(a.metrics.get("mape", "tree4", "provided"))
    assert cell["n_ok"] == 48 and cell["n_expected"] == 48
    assert set(cell["mape_by_domain"]) == {"int", "x0.01", "minus50", "x10000"}
    assert "vs_direct" in cell and cell["vs_direct"]["nmae"]["diff"] == pytest.approx(0.0)
    assert data["rounds"]["tree2"] == {"min": 6, "max": 7}
    assert data["facts"]["served_models"] == {"sim-1": 96}


def test_same_seed_same_intervals(runs: RunFactory, capsys: pytest.CaptureFixture) -> None:
    def off(family: int, domain: str, condition: str, order: str, decoder: str) -> int:
        return exact(family, domain, condition, order, decoder) + (family * 5) % 7

    path = str(runs.affine(families=range(8), predict=off))
    first = run_cli(capsys, "analyze", path, "--json", "--bootstrap", "100", "--seed", "4")[1]
    second = run_cli(capsys, "analyze", path, "--json", "--bootstrap", "100", "--seed", "4")[1]
    other = run_cli(capsys, "analyze", path, "--json", "--bootstrap", "100", "--seed", "5")[1]
    assert first == second and first != other


def _bad_manifest(tmp: Path, content: bytes) -> Path:
    run = tmp / "r"
    run.mkdir()
    (run / "manifest.json").write_bytes(content)
    return run


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda tmp: tmp / "nope", "does not exist; pass a folder written by `numericjev run`"),
        (lambda tmp: (tmp / "f.txt").write_text("x") and tmp / "f.txt", "is a file, not a run"),
        (lambda tmp: tmp, "has no manifest.json, so it is not a run folder"),
        (lambda tmp: _bad_manifest(tmp, b"{oops"), "manifest.json is not valid JSON"),
        (lambda tmp: _bad_manifest(tmp, b"[1, 2]"), "must hold a JSON object"),
        (lambda tmp: _bad_manifest(tmp, b'{"suite": "affine"}'), "lacks 'decoders'"),
        (
            lambda tmp: _bad_manifest(
                tmp, b'{"format_version": 9, "suite": "a", "decoders": [], "model": {"name": "m"}}'
            ),
            "format_version 9; this analysis reads version 1 — upgrade numericjev",
        ),
    ],
)
@pytest.mark.parametrize("command", ["analyze", "report"])
def test_bad_input_is_one_line_exit_2_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture, make, message: str, command: str
) -> None:
    path = make(tmp_path)
    before = sorted(tmp_path.rglob("*"))
    code, out, err = run_cli(capsys, command, str(path))
    assert code == 2 and out == ""
    assert err.startswith(f"numericjev {command}: error: ") and err.count("\n") == 1
    assert message in err
    assert sorted(tmp_path.rglob("*")) == before


def test_torn_middle_line_is_a_clear_error(runs: RunFactory, capsys: pytest.CaptureFixture) -> None:
    path = runs.affine(families=range(1))
    lines = (path / "outputs.jsonl").read_bytes().splitlines(keepends=True)
    (path / "outputs.jsonl").write_bytes(b"".join([lines[0], lines[1][:20] + b"\n", *lines[2:]]))
    code, _, err = run_cli(capsys, "analyze", str(path))
    assert code == 2 and "outputs.jsonl line 2 is not a JSON object" in err


def test_usage_errors_return_2(capsys: pytest.CaptureFixture) -> None:
    assert main(["analyze"]) == 2
    assert main(["analyze", "x", "--bootstrap", "-1"]) == 2
    assert main(["frobnicate"]) == 2
    assert "must be 0 or more" in capsys.readouterr().err
    assert main(["--help"]) == 0


def test_registry_selects_tables_per_suite(runs: RunFactory) -> None:
    def only_title(a):
        return [Table("Custom " + a.facts.suite, ("Decoder",), ())]

    register_tables("custom-suite", only_title)
    a = analyze_run(load_run(runs.affine(families=range(1), suite="custom-suite")), n_boot=0)
    # The suite's own tables, then the ones every suite gets (the log accuracy ratio).
    titles = [t.title for t in build_tables(a)]
    assert titles[0] == "Custom custom-suite"
    assert [t.split(" — ")[0] for t in titles[1:]] == ["Log accuracy ratio"]
    # An unregistered suite gets the generic tables.
    generic = analyze_run(load_run(runs.affine("g", families=range(1), suite="unregistered")), 0)
    assert build_tables(generic)[0].title.startswith("Evaluation — model sim · suite unregistered")


def test_zero_targets_are_noted(runs: RunFactory, capsys: pytest.CaptureFixture) -> None:
    # minus50 with z = 50 has target 0: APE is undefined there and the table says so.
    lines = [
        output_line(0, "minus50", "arithmetic", o, "direct", 52, z=50)
        for o in ("ascending", "reversed")
    ]
    path = runs.write("zero", lines, decoders=["direct"], conditions=["arithmetic"], n_jobs=2)
    code, out, _ = run_cli(capsys, "analyze", str(path), "--bootstrap", "50")
    assert code == 0
    assert "APE is undefined for 2 ok output(s) with target 0: not in MAPE." in out
    assert table_row(out, "Fixed affine-grid evaluation", "Direct values")[1:3] == ["n/a", "2.00"]


def test_a_reader_that_goes_away_is_not_an_error(runs: RunFactory) -> None:
    """``numericjev analyze RUN | head -1`` exits 0, as the harness commands do."""
    import subprocess
    import sys

    path = runs.affine(families=range(6))
    with subprocess.Popen(
        [sys.executable, "-m", "harness.cli", "analyze", str(path), "--bootstrap", "50"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as child:
        assert child.stdout is not None and child.stderr is not None
        child.stdout.readline()
        child.stdout.close()  # the reader goes away after one line
        err = child.stderr.read()
        assert child.wait(timeout=60) == 0
    assert b"Traceback" not in err
