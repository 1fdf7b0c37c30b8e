"""The Probabilities section in ``analyze``, ``report`` and ``diff``: it leaves the paper's
tables alone, says so when a run has no probabilities, and diffs only common outputs."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import orjson
import pytest
from probability_logs import LogWriter, tree_path, true_child

from analysis import analysis_markdown, analyze_run, load_run
from analysis.cli import main
from analysis.loading.probabilities.answers import load_answers


def without_section(markdown: str) -> str:
    """The Markdown with the Probabilities section cut out."""
    start = markdown.index("## Probabilities")
    end = markdown.index("### Run facts")
    return markdown[:start] + markdown[end:]


def small_run(tmp_path: Path, name: str = "run", probabilities: bool = True, drop: int = 0) -> Path:
    """Four cases × 2 orders of tree4 and direct on [0, 100); reversed answers lean wrong."""
    log = LogWriter(n_cells=100)
    for case, cell in enumerate((7, 33, 58, 91)[drop:]):
        for order in ("ascending", "reversed"):
            job = f"c{case}/{order}"
            wrong = order == "reversed" and case % 2 == 0
            pick = true_child(cell + 30 if wrong else cell)
            path = tree_path(100, 4, pick)
            log.tree_output(job, "tree4", Decimal(cell), path, order=order, case=f"c{case}")

            def probs(depth: int, k: int, j: int) -> dict[str, float]:
                return {str(i): (0.7 if i == j else 0.3 / (k - 1)) for i in range(k)}

            log.answer_path(
                job, "tree4", path, probs if probabilities else None, order == "reversed"
            )
            if not probabilities:
                for line in log.requests[-len(path.steps) :]:
                    for answer in line["response"]["answers"].values():
                        answer.pop("probabilities")
    return log.write(tmp_path / name, orders=["ascending", "reversed"])


def test_the_paper_tables_do_not_change(tmp_path: Path) -> None:
    run = load_run(small_run(tmp_path))
    plain = analysis_markdown(analyze_run(run, 200))
    full = analysis_markdown(analyze_run(run, 200, answers=load_answers(run.manifest.folder)))
    assert "## Probabilities" not in plain and "## Probabilities" in full
    assert without_section(full) == plain


def test_analyze_json_adds_only_the_probabilities_key(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    folder = str(small_run(tmp_path))
    assert main(["analyze", folder, "--json", "--bootstrap", "50"]) == 0
    full = orjson.loads(capsys.readouterr().out)
    assert main(["analyze", folder, "--json", "--bootstrap", "50", "--no-probabilities"]) == 0
    plain = orjson.loads(capsys.readouterr().out)
    assert plain.pop("probabilities") is None
    probabilities = full.pop("probabilities")
    assert full == plain
    assert probabilities["available"] is True
    (group,) = probabilities["first_divergence"]
    assert group["holds"] is True and group["n"] == 8
    # Calibration counts the questions asked while an option held y: the at-risk ones.
    at_risk = sum(d["questions_with_probabilities"] for d in group["depths"])
    assert probabilities["calibration"]["rows"][0]["n"] == at_risk
    assert at_risk < probabilities["read"]["with_probabilities"]  # two paths went wrong
    (orders,) = probabilities["order_averaging"]["rows"]
    assert orders["n_cases"] == 4


def test_a_run_without_probabilities_says_so(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    folder = str(small_run(tmp_path, probabilities=False))
    assert main(["analyze", folder, "--bootstrap", "0"]) == 0
    out = capsys.readouterr().out
    section = out[out.index("## Probabilities") : out.index("### Run facts")]
    assert "This run's answers carry no probabilities" in section
    assert "Calibration" not in section and "Order-averaged" not in section
    assert "p̄" not in section  # no probability column printed as zeros
    assert "First divergence and the paper's error bound" in section  # traces alone suffice
    assert main(["analyze", folder, "--json", "--bootstrap", "0"]) == 0
    probabilities = orjson.loads(capsys.readouterr().out)["probabilities"]
    assert probabilities["available"] is False and probabilities["calibration"]["rows"] == []


def test_report_draws_the_reliability_diagram_only_with_probabilities(tmp_path: Path) -> None:
    with_p, without_p = small_run(tmp_path, "a"), small_run(tmp_path, "b", probabilities=False)
    assert main(["report", str(with_p), "--bootstrap", "0", "--decoder", "tree4"]) == 0
    assert main(["report", str(without_p), "--bootstrap", "0", "--decoder", "tree4"]) == 0
    assert (with_p / "report" / "reliability.svg").is_file()
    assert (with_p / "report" / "reliability.png").is_file()
    assert "![Reliability" in (with_p / "report" / "report.md").read_text()
    assert not (without_p / "report" / "reliability.svg").exists()


def test_diff_compares_only_outputs_ok_in_both(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    a, b = small_run(tmp_path, "a"), small_run(tmp_path, "b", drop=1)  # B lacks case c0's jobs
    # ... and one of B's outputs failed: it leaves the comparison too.
    lines = (b / "outputs.jsonl").read_bytes().splitlines(keepends=True)
    failed = orjson.loads(lines[0])
    failed.update(status="failed", value=None, trace=[])
    (b / "outputs.jsonl").write_bytes(b"".join(lines) + orjson.dumps(failed) + b"\n")
    assert main(["diff", str(a), str(b), "--json", "--bootstrap", "0"]) == 0
    probabilities = orjson.loads(capsys.readouterr().out)["probabilities"]
    assert probabilities["n_common"] == 5 and probabilities["only_a"] == 3
    assert probabilities["only_b"] == 0
    assert probabilities["a"]["first_divergence"][0]["n"] == 5
    assert probabilities["b"]["first_divergence"][0]["n"] == 5
    assert main(["diff", str(a), str(b), "--bootstrap", "0"]) == 0
    out = capsys.readouterr().out
    assert "### First divergence, A and B" in out and "over the 5 interval outputs" in out


def test_report_draws_the_distribution_figures_only_with_probabilities(tmp_path: Path) -> None:
    with_p, without_p = small_run(tmp_path, "a"), small_run(tmp_path, "b", probabilities=False)
    for folder in (with_p, without_p):
        assert main(["report", str(folder), "--bootstrap", "0", "--decoder", "tree4"]) == 0
    for stem in ("pit", "coverage"):
        assert (with_p / "report" / f"{stem}.svg").is_file()
        assert not (without_p / "report" / f"{stem}.svg").exists()
    assert "PIT histogram" in (with_p / "report" / "index.html").read_text()
    page = (without_p / "report" / "index.html").read_text()
    assert "PIT histogram" not in page and "Coverage of the central" not in page
