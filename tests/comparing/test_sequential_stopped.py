"""A ``compare --sequential`` comparison its rule stopped reads as finished (issue 44 item 5):
no "unfinished" or "incomplete" line for the families it chose not to ask, and the families,
requests and cost saved open the summary (terminal, summary.md, summary.json) and the page;
a job genuinely failed or missing in the families asked is still said."""

from __future__ import annotations

import contextlib
import io
import shutil
from pathlib import Path

import orjson
import pytest

from tests.browser import chromium, open_page
from tests.runhelpers import cli

# 8 families in looks of 5, 6 and 8; an interval inside +-1000 points is futile at once, so
# the rule stops every cell at the first look (5 families asked, 3 left).
ARGV = ("compare", "--models", "sim,sim:seed=2", "--suites", "affine", "--sequential")
ARGV += ("--param", "affine.per_operator=2", "--margin", "1000", "--bootstrap", "0")


@pytest.fixture(scope="module")
def stopped(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A comparison the rule stopped at look 1 of 3, and what compare printed."""
    folder = tmp_path_factory.mktemp("seq") / "c"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli(*ARGV, "--out", str(folder), "--no-progress") == 0
    return folder, out.getvalue()


def test_the_terminal_says_finished_and_opens_with_what_was_saved(
    stopped: tuple[Path, str],
) -> None:
    printed = stopped[1]
    assert "unfinished" not in printed and "incomplete" not in printed.lower()
    assert "make resume" not in printed
    lines = printed.splitlines()
    saved = next(i for i, line in enumerate(lines) if "finished early" in line)
    assert saved < next(i for i, line in enumerate(lines) if line.startswith("Verdicts on"))
    assert "5 of 8 families asked" in lines[saved] and "saved about" in lines[saved]
    assert "cost USD" in lines[saved]


def test_summary_md_and_json_open_with_the_stop_and_warn_of_nothing_unasked(
    stopped: tuple[Path, str],
) -> None:
    folder, _ = stopped
    markdown = (folder / "summary.md").read_text()
    assert "incomplete" not in markdown.lower() and "unfinished" not in markdown
    assert markdown.index("finished early") < markdown.index("| Verdict")
    assert "(+" in markdown and "unasked)" in markdown  # the runs table: pending left on purpose
    summary = orjson.loads((folder / "summary.json").read_bytes())
    assert list(summary)[:3] == ["comparison", "folder", "sequential"]
    seq = summary["sequential"]
    assert seq["stopped_early"] is True and seq["families_saved"] == 3
    assert seq["requests_saved_projected"] == seq["requests_full_projected"] - seq["requests"] > 0
    assert not [w for w in summary["warnings"] if w["kind"] == "incomplete"]


def test_the_page_opens_with_what_was_saved_and_no_incomplete_warning(
    stopped: tuple[Path, str],
) -> None:
    folder, _ = stopped
    with chromium() as browser:
        opened = open_page(browser, folder / "index.html")
        page = opened.page
        assert not [t for t in page.locator(".warning").all_inner_texts() if "incomplete" in t]
        verdicts = page.locator("#verdicts").inner_text()
        assert "finished early" in verdicts and "saved about" in verdicts
        assert verdicts.index("finished early") < verdicts.index("Verdicts on")
        assert opened.refused == [] and opened.errors == []


def _fail_job(run: Path, family: int) -> None:
    """The first output of ``family`` (asked at look 1) made failed: its job is failed."""
    lines = (run / "outputs.jsonl").read_bytes().splitlines()
    at = next(i for i, x in enumerate(lines) if orjson.loads(x)["family"] == family)
    row = orjson.loads(lines[at])
    row["status"] = "failed"
    lines[at] = orjson.dumps(row)
    (run / "outputs.jsonl").write_bytes(b"\n".join(lines) + b"\n")


def _one_more_job(run: Path) -> None:
    """The manifest promises one job more than the suite has: one is missing, not unasked."""
    manifest = orjson.loads((run / "manifest.json").read_bytes())
    manifest["n_jobs"] += 1
    (run / "manifest.json").write_bytes(orjson.dumps(manifest))


@pytest.mark.parametrize("fail", [True, False], ids=["failed", "missing"])
def test_a_job_failed_or_missing_in_the_families_asked_is_still_incomplete(
    stopped: tuple[Path, str], tmp_path: Path, fail: bool
) -> None:
    folder = tmp_path / "c"
    shutil.copytree(stopped[0], folder)
    record = orjson.loads((folder / "compare.json").read_bytes())
    asked = int(record["options"]["sequential"]["order"]["affine"][0])  # in look 1
    run = folder / record["cells"][1]["folder"]
    if fail:
        _fail_job(run, asked)
    else:
        _one_more_job(run)
    shutil.rmtree(run / ".columns", ignore_errors=True)  # read the edited log again
    assert cli("report", str(folder), "--bootstrap", "0") == 0
    summary = orjson.loads((folder / "summary.json").read_bytes())
    warned = [w["message"] for w in summary["warnings"] if w["kind"] == "incomplete"]
    assert len(warned) == 1 and "left unasked by the sequential rule" in warned[0]
    assert ("1 failed, 0 pending" if fail else "0 failed, 1 pending") in warned[0]
