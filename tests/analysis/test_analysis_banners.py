"""Incomplete and mixed runs are marked, not hidden (issue 9): banners and --strict."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from analysis_runs import SKIP, RunFactory, exact, manifest, request_line

from analysis import analyze_run, diff_runs, load_run
from analysis.cli import main


def run_cli(capsys: pytest.CaptureFixture, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def kinds(path: Path) -> list[str]:
    return [b.kind for b in analyze_run(load_run(path), n_boot=0).banners]


def cut_short(family: int, domain: str, condition: str, order: str, decoder: str):
    """Families 0-2 written but one job of family 2 failed part-way (tree2); family 3 pending."""
    if family == 3:
        return SKIP
    if (family, domain, condition, order, decoder) == (
        2,
        "int",
        "arithmetic",
        "ascending",
        "tree2",
    ):
        return None
    return exact(family, domain, condition, order, decoder)


def test_complete_run_has_no_banner(runs: RunFactory, capsys: pytest.CaptureFixture) -> None:
    path = runs.affine()
    assert kinds(path) == []
    code, out, _ = run_cli(capsys, "analyze", str(path), "--json", "--bootstrap", "0")
    assert code == 0 and orjson.loads(out)["warnings"] == []
    assert run_cli(capsys, "analyze", str(path), "--strict", "--bootstrap", "0")[0] == 0


def test_incomplete_run_banner_counts_jobs(runs: RunFactory, capsys: pytest.CaptureFixture) -> None:
    path = runs.affine("part", predict=cut_short)
    code, out, _ = run_cli(capsys, "analyze", str(path), "--bootstrap", "0")
    assert code == 0
    first_table = out.index("###")
    warning = out.index(
        "> **Warning:** run part is incomplete: 47 of 64 jobs done, 1 failed, 16 pending"
    )
    assert warning < first_table  # at the top, above every table
    code, out, _ = run_cli(capsys, "analyze", str(path), "--json", "--bootstrap", "0")
    data = orjson.loads(out)
    assert [w["kind"] for w in data["warnings"]] == ["incomplete"]
    assert (data["facts"]["jobs_done"], data["facts"]["jobs_failed"]) == (47, 1)
    assert data["facts"]["jobs_pending"] == 16


def test_run_answered_by_two_models(runs: RunFactory) -> None:
    outputs_run = runs.affine("one", families=range(1))
    lines = (outputs_run / "outputs.jsonl").read_bytes().splitlines()
    jobs = sorted({orjson.loads(line)["job"] for line in lines})
    requests = [request_line(job, model="m-a" if i % 3 else "m-b") for i, job in enumerate(jobs)]
    requests.append(request_line(jobs[0], 2, model=None))  # unreported: not a third model
    outputs = [orjson.loads(line) for line in lines]
    path = runs.write("mixed", outputs, requests, n_jobs=len(jobs))
    (banner,) = analyze_run(load_run(path), n_boot=0).banners
    assert banner.kind == "mixed_models"
    assert "answered by 2 served models (m-a ×10, m-b ×6)" in banner.message


def write_sessions(path: Path, *records: dict[str, Any]) -> None:
    (path / "sessions.jsonl").write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))


def test_resume_with_other_settings_is_marked(runs: RunFactory) -> None:
    path = runs.affine("r", limits={"max_requests": None, "concurrency": 8})
    same = {
        "command": "run",
        "model": "sim",
        "base_url": None,
        "limits": {"concurrency": 8},
        "source_hash": "b" * 64,
    }
    write_sessions(path, {**same, "limits": {"max_requests": None, "concurrency": 8}})
    assert kinds(path) == []  # sessions that match the manifest say nothing
    write_sessions(
        path,
        {**same, "limits": {"max_requests": None, "concurrency": 8}},
        {
            "command": "resume",
            "model": {"name": "sim", "base_url": "http://127.0.0.1:9/v1"},
            "limits": {"max_requests": 500, "concurrency": 8},
            "allowed_mismatches": ["base_url"],
            "source_hash": "d" * 64,
        },
    )
    (banner,) = analyze_run(load_run(path), n_boot=0).banners
    assert banner.kind == "resumed"
    assert "resume #2" in banner.message
    assert "base_url absent → http://127.0.0.1:9/v1" in banner.message
    assert "max_requests" not in banner.message  # limits never change what was answered
    assert "allowed mismatches: base_url" in banner.message
    assert "harness source bbbbbbbbbbbb → dddddddddddd" in banner.message


def test_a_resume_with_other_limits_only_is_not_marked(runs: RunFactory) -> None:
    path = runs.affine("r", limits={"max_requests": None, "concurrency": 8})
    same = {"command": "run", "model": "sim", "base_url": None, "source_hash": "b" * 64}
    write_sessions(
        path,
        {**same, "limits": {"max_requests": None, "concurrency": 8}},
        {**same, "command": "resume", "limits": {"max_requests": 500, "concurrency": 64}},
    )
    assert kinds(path) == []


def test_a_manifest_list_of_resumptions_is_read_too(runs: RunFactory) -> None:
    path = runs.affine("r", resumptions=[{"command": "resume", "model": "other-model"}])
    (banner,) = analyze_run(load_run(path), n_boot=0).banners
    assert "model sim → other-model" in banner.message


def sim_manifest(**model: Any) -> dict[str, Any]:
    base = manifest()["model"]
    return {**base, "params": {"seed": 0, "confusion": 0.2}, **model}


def test_diff_names_every_difference_of_the_sides(runs: RunFactory) -> None:
    a = runs.affine("a", model=sim_manifest())
    b = runs.affine(
        "b",
        model=sim_manifest(
            params={"seed": 7, "confusion": 0.2},
            wire="openai",
            price_usd_per_million_input=0.042,
        ),
        source_hash="c" * 64,
        decoders=["direct", "tree2"],
    )
    messages = [b.message for b in diff_runs(load_run(a), load_run(b), n_boot=0).banners]
    assert messages == [
        "A and B differ in harness source hash (A bbbbbbbbbbbb, B cccccccccccc): prompts or "
        "decoders may have changed between the runs",
        "A and B differ in sim knobs (seed A 0, B 7)",
        "A and B differ in wire format (A systemone, B openai)",
        "A and B differ in price_usd_per_million_input (A 0.0, B 0.042)",
        "A and B differ in decoders (A direct, tree2, tree4, tree10, digits, bits; B direct, tree2)",
    ]


def test_an_unknown_price_is_called_unknown_not_absent(runs: RunFactory) -> None:
    # A served model at a URL the price table does not cover records a null price.
    a = runs.affine("a", model=sim_manifest())
    b = runs.affine("b", model=sim_manifest(price_usd_per_million_input=None))
    messages = [b.message for b in diff_runs(load_run(a), load_run(b), n_boot=0).banners]
    assert "A and B differ in price_usd_per_million_input (A 0.0, B unknown)" in messages


def test_diff_of_one_run_says_so(runs: RunFactory, capsys: pytest.CaptureFixture) -> None:
    a = runs.affine("a")
    code, out, _ = run_cli(capsys, "diff", str(a), str(a), "--bootstrap", "0")
    assert code == 0 and f"> **Warning:** A and B are one run folder ({a})" in out
    copy = runs.affine("copy")
    (copy / "manifest.json").write_bytes((a / "manifest.json").read_bytes())  # a copied folder
    (banner,) = diff_runs(load_run(a), load_run(copy), n_boot=0).banners
    assert banner.kind == "same_run" and "run_id a" in banner.message
    code, out, _ = run_cli(capsys, "diff", str(a), str(copy), "--json", "--bootstrap", "0")
    assert [w["kind"] for w in orjson.loads(out)["warnings"]] == ["same_run"]


def test_diff_carries_each_sides_own_banners(runs: RunFactory) -> None:
    a = runs.affine("a")
    b = runs.affine("b", predict=cut_short)
    (banner,) = diff_runs(load_run(a), load_run(b), n_boot=0).banners
    assert banner.message.startswith("B (run b) is incomplete: 47 of 64 jobs done")


@pytest.mark.parametrize("command", ["analyze", "report", "diff"])
def test_strict_refuses_with_one_line_and_writes_nothing(
    runs: RunFactory, capsys: pytest.CaptureFixture, command: str
) -> None:
    complete = runs.affine("a")
    part = runs.affine("part", predict=cut_short)
    argv = [command, str(part), "--strict", "--bootstrap", "0"]
    if command == "diff":
        argv.insert(1, str(complete))
    code, out, err = run_cli(capsys, *argv)
    assert code == 2 and out == ""
    assert err.count("\n") == 1
    assert err.startswith(f"numericjev {command}: error: refused by --strict: ")
    assert "is incomplete: 47 of 64 jobs done" in err
    assert not (part / "report").exists()
    # Without --strict the same input is analysed, with the banner.
    code, out, err = run_cli(capsys, *[x for x in argv if x != "--strict"])
    assert code == 0
    if command == "report":
        assert "warning: run part is incomplete" in err
        assert (
            "> **Warning:** run part is incomplete" in (part / "report" / "report.md").read_text()
        )
