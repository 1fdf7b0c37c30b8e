"""The paper's side protocols: the bit-prompt control and the crossed prompt control (suite
``bitprompts``), and the continuous-head transfer table of imported predictions."""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import orjson
import pytest

from harness.backends.oracle import Oracle
from harness.backends.sim import SimModel
from harness.protocol.decoders import make_decoder
from harness.protocol.grid import Grid
from harness.protocol.meaning import interpret
from harness.protocol.registry import load_suite
from simstudy.simulate import answer_in_process
from tests.runhelpers import SMALL, cli

INT = Grid(Decimal(0), Decimal(1), 16)
FRACTION = Grid(Decimal(0), Decimal("0.0625"), 16)
PAIRS = [("bits_plain", "bits"), ("actual_bits_plain", "actual_bits")]


def meanings(name: str, grid: Grid) -> list[tuple[str, Fraction, int]]:
    """(kind, place, power) of every question the decoder asks."""
    out = []
    for q in make_decoder(name, grid, "x is the result.").ready():
        m = interpret(q.instructions, dict(q.criteria))
        assert m is not None, q.instructions
        out.append((m.kind, m.place, m.power))
    return out


@pytest.mark.parametrize("grid", [INT, FRACTION])
@pytest.mark.parametrize(("plain", "explicit"), PAIRS)
def test_underspecified_bits_read_back_as_the_explicit_ones(
    grid: Grid, plain: str, explicit: str
) -> None:
    # Same meaning, other words: the oracle (and the sim) answer both alike.
    assert meanings(plain, grid) == meanings(explicit, grid)
    asked = make_decoder(plain, grid, "x is the result.").ready()
    assert all("weight" not in q.instructions and "modulo" not in q.instructions for q in asked)


def test_the_oracle_recovers_every_target_of_the_bit_prompt_suite(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert cli("check", "--suite", "bitprompts") == 0
    assert "192 recovered exactly (all recovered)" in capsys.readouterr().out
    exact = answer_in_process(load_suite("bitprompts"), Oracle())
    assert all(Fraction(r["value"]) == Fraction(r["target"]) for r in exact)


def test_the_sim_answers_both_wordings() -> None:
    records = answer_in_process(load_suite("bitprompts"), SimModel())
    names = {r["decoder"] for r in records}
    assert names == {"actual_bits", "actual_bits_plain", "bits", "bits_plain"}
    assert all(r["status"] == "ok" for r in records)


def cells(text: str, start: str, first: int, last: int) -> list[str]:
    """Cells ``first`` to ``last`` of the table row of ``text`` that starts with ``start``."""
    line = next(x for x in text.splitlines() if x.startswith(start))
    return [c.strip() for c in line.split("|")[first : last + 1]]


def test_the_control_tables_show_the_run_beside_the_paper(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "run"
    assert cli("run", "--suite", "bitprompts", "--model", "oracle", "--run", str(folder),
               "--no-progress") == 0  # fmt: skip
    capsys.readouterr()
    assert cli("analyze", str(folder), "--no-probabilities") == 0
    out = capsys.readouterr().out
    control = out[out.index("Bit-prompt control") : out.index("underspecified minus explicit")]
    # Every MAPE with its family interval, per option order too.
    assert cells(control, "| bits of x, underspecified", 2, 4) == ["0.00 [0.00, 0.00]"] * 3
    assert "| paper: underspecified bit queries" in control and "40.95–46.51" in control
    paired = out[out.index("underspecified minus explicit") : out.index("Crossed prompt table")]
    # The exact oracle: both wordings exact on all 48 jobs of 12 families, no difference.
    assert cells(paired, "| bits of x: underspecified − explicit", 2, 5) == [
        "0.00 [0.00, 0.00]",
        "1.0000",
        "48",
        "12",
    ]
    assert cells(paired, "| paper: underspecified − explicit", 2, 3) == ["16.64–26.36", "–"]
    crossed = out[out.index("Crossed prompt table (this project's design, not the paper's)") :]
    assert cells(crossed, "| bits of the index q", 2, 3) == ["0.00 [0.00, 0.00]"] * 2
    assert cli("analyze", str(folder), "--no-probabilities", "--json") == 0
    assert b"bit_prompt_control" in capsys.readouterr().out.encode()


def test_imported_predictions_get_the_transfer_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "run"
    assert cli("run", *SMALL, "--model", "oracle", "--run", str(folder), "--no-progress") == 0
    capsys.readouterr()
    assert cli("analyze", str(folder), "--no-probabilities") == 0
    assert "Continuous-head transfer" not in capsys.readouterr().out  # nothing imported yet
    # A head that predicts every target exactly, and one always 10% high.
    lines, seen = [], set()
    for line in (folder / "outputs.jsonl").read_bytes().splitlines():
        r = orjson.loads(line)
        if (r["case"], r["condition"]) not in seen:
            seen.add((r["case"], r["condition"]))
            lines.append({"case": r["case"], "condition": r["condition"], "value": r["target"]})
    higher = [x | {"value": str(Decimal(x["value"]) * Decimal("1.1"))} for x in lines]
    for name, rows in (("exact-head", lines), ("high-head", higher)):
        path = tmp_path / f"{name}.jsonl"
        path.write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in rows))
        assert cli("import-predictions", str(folder), str(path), "--name", name) == 0
    capsys.readouterr()
    assert cli("analyze", str(folder), "--no-probabilities") == 0
    out = capsys.readouterr().out
    table = out[out.index("Continuous-head transfer") :]
    # The imported heads with the main table's family intervals; the paper's without.
    assert cells(table, "| exact-head (imported)", 2, 6) == [
        "100.00 [100.00, 100.00]",
        "0.00 [0.00, 0.00]",
        "0.00 [0.00, 0.00]",
        "100.00 [100.00, 100.00]",
        "0.00 [0.00, 0.00]",
    ]
    assert cells(table, "| high-head (imported)", 2, 3) == [
        "0.00 [0.00, 0.00]",
        "10.00 [10.00, 10.00]",
    ]
    assert cells(table, "| paper: 4B Spline", 3, 3) == ["117.78"]
    assert "| paper: 9B Beta" in table
    # One value per case, copied to both orders: nothing to permute, so no ordering gap.
    sensitivity = out[out.index("Sensitivity as a percentage") :].split("\n### ")[0]
    assert cells(sensitivity, "| high-head ", 2, 5) == [
        "n/a",
        "n/a",
        "1.67 [1.67, 1.67]",
        "1.67 [1.67, 1.67]",
    ]
    assert cells(sensitivity, "| Tree (K=10)", 2, 2) == ["0.00 [0.00, 0.00]"]
    assert "nothing to permute" in sensitivity


def test_a_run_without_trees_gets_a_report_without_a_decision_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "run"
    assert cli("run", "--suite", "bitprompts", "--run", str(folder), "--no-progress") == 0
    # The sim errs: each order's MAPE lies inside its own family interval, and not every
    # interval is a single point.
    capsys.readouterr()
    assert cli("analyze", str(folder), "--no-probabilities", "--json") == 0
    control = orjson.loads(capsys.readouterr().out)["suite_tables"]["bit_prompt_control"]
    spans = control["mape_by_order_interval"]
    for decoder, row in control["mape_by_order"].items():
        for order in ("ascending", "reversed"):
            lo, hi = spans[decoder][order]
            assert lo <= row[order] <= hi
    assert any(lo < hi for row in spans.values() for lo, hi in row.values())
    assert cli("report", str(folder)) == 0
    written = {p.name for p in (folder / "report").iterdir()}
    assert "index.html" in written and "report.md" in written
    assert not any(name.startswith("decision_path") for name in written)
