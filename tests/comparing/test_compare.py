"""``numericjev compare``: a whole comparison in one command, resumable, summarised once."""

from __future__ import annotations

import signal
import time
from collections import defaultdict
from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.runhelpers import answered, cli, final_outputs, records, spawn

MODELS = "sim,sim:seed=7"
ARGS = ["--suites", "exploratory,affine", "--param", "affine.per_operator=2", "--no-progress"]
CELLS = ("exploratory-m1-sim", "exploratory-m2-sim_seed_7", "affine-m1-sim",
         "affine-m2-sim_seed_7")  # fmt: skip


def compare(out: Path, *extra: str, models: str = MODELS) -> int:
    return cli("compare", "--models", models, *ARGS, "--out", str(out), *extra)


def summary(folder: Path) -> str:
    """summary.md with the comparison's own folder name taken out."""
    return (folder / "summary.md").read_text().replace(str(folder), "DIR")


def rows(folder: Path) -> list[dict[str, Any]]:
    return list(orjson.loads((folder / "summary.json").read_bytes())["rows"])


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("cmp") / "reference"
    assert compare(folder) == 0
    return folder


def test_compare_runs_every_cell_and_writes_one_summary(
    reference: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert sorted(p.name for p in reference.iterdir()) == sorted(
        [
            *CELLS,
            *("compare.json", "summary.md", "summary.json", "index.html"),
            *("paired_differences.svg", "paired_differences.png"),
        ]
    )
    made = orjson.loads((reference / "compare.json").read_bytes())["comparison_id"]
    assert made.startswith("reference-")  # unique across comparisons of one folder name
    for cell in CELLS:
        manifest = orjson.loads((reference / cell / "manifest.json").read_bytes())
        assert manifest["run_id"] == f"{made}/{cell}"
        assert manifest["model"]["params"]["seed"] == (7 if "seed_7" in cell else 0)
    text = summary(reference)
    assert text.startswith("# Comparison: sim:seed=7 against sim · suites exploratory, affine")
    assert "SIMULATED MODEL" in text and "Holm-corrected over 19 cells" in text
    assert "| affine      | Tree (K=10)         | Provided   | sim:seed=7 |" in text
    page = (reference / "index.html").read_text()
    assert "Verdicts" in page and "exploratory · sim:seed=7" in page
    # analyze of the folder prints the same summary; report writes it again.
    capsys.readouterr()
    assert cli("analyze", str(reference)) == 0
    assert capsys.readouterr().out.replace(str(reference), "DIR") == text
    out = reference.parent / "again"
    assert cli("report", str(reference), "--out", str(out)) == 0
    assert (out / "summary.md").read_text().replace(str(reference), "DIR") == text
    assert cli("diff", str(reference), str(reference / CELLS[0])) == 2
    assert "is a comparison folder" in capsys.readouterr().err


def _ape(record: dict[str, Any]) -> float | None:
    target, value = Decimal(record["target"]), Decimal(record["value"])
    return None if target == 0 else float(100 * abs(value - target) / abs(target))


def test_deltas_are_paired_means_over_common_units(reference: Path) -> None:
    # An independent computation from the two cells' outputs.jsonl, with some outputs of
    # the later model marked failed: the difference must use only outputs ok in both.
    later = reference.parent / "later"
    later.mkdir()
    for cell in CELLS:
        source = reference / cell
        target = later / cell
        target.mkdir()
        for name in ("manifest.json", "requests.jsonl", "sessions.jsonl"):
            (target / name).write_bytes((source / name).read_bytes())
        lines = records(source / "outputs.jsonl")
        if "seed_7" in cell:  # fail every fifth output of the later model
            for i, r in enumerate(lines):
                if i % 5 == 0:
                    r.update(status="failed", value=None, cell=None, rounds=None, trace=[])
        (target / "outputs.jsonl").write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in lines))
    (later / "compare.json").write_bytes((reference / "compare.json").read_bytes())
    assert cli("analyze", str(later)) == 0
    assert cli("analyze", str(later), "--strict") == 2  # the failed jobs are a banner
    from analysis.cli import summarise_comparison

    assert summarise_comparison(later) == 0
    for suite in ("exploratory", "affine"):
        base = records(later / f"{suite}-m1-sim" / "outputs.jsonl")
        other = {(r["job"], r["decoder"]): r for r in records(
            later / f"{suite}-m2-sim_seed_7" / "outputs.jsonl")}  # fmt: skip
        diffs: dict[tuple[str, str], list[float]] = defaultdict(list)
        for a in base:
            b = other.get((a["job"], a["decoder"]))
            if a["status"] == "ok" and b is not None and b["status"] == "ok":
                ape_a, ape_b = _ape(a), _ape(b)
                if ape_a is not None and ape_b is not None:
                    diffs[(a["decoder"], a["condition"])].append(ape_b - ape_a)
        found = {(r["decoder"], r["condition"]): r for r in rows(later) if r["suite"] == suite}
        assert set(found) == set(diffs)
        for key, values in diffs.items():
            assert found[key]["n_common"] == len(values)
            assert found[key]["delta"] == pytest.approx(sum(values) / len(values), abs=1e-9)
            # The baseline's own mean is over more outputs than the paired difference.
            assert found[key]["baseline"]["n_ok"] > len(values)


def test_killed_part_way_and_resumed_gives_the_same_summary(
    reference: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "killed"
    child = spawn("compare", "--models", MODELS, *ARGS, "--out", str(folder))
    log = folder / "affine-m1-sim" / "requests.jsonl"  # the third of four cells
    deadline = time.monotonic() + 60
    while child.poll() is None and time.monotonic() < deadline:
        if log.exists() and log.read_bytes().count(b"\n") >= 100:
            break
        time.sleep(0.002)  # noqa: TID251 - polling a child process
    assert child.poll() is None, "the comparison finished before it could be killed"
    child.send_signal(signal.SIGKILL)
    child.wait()
    assert not (folder / "summary.md").exists()
    # Usually the fourth cell has not started (resume starts it; the cap test checks that
    # case for certain), and the third is cut mid-way.
    assert cli("resume", str(folder), "--no-progress") == 0
    assert summary(folder) == summary(reference)
    for cell in CELLS:
        assert final_outputs(folder / cell) == final_outputs(reference / cell)
        counts = answered(folder / cell)
        assert max(counts.values()) == 1, f"{cell}: an answered request was sent again"
        assert sum(counts.values()) == sum(answered(reference / cell).values())


def test_a_cap_stops_the_comparison_and_resume_finishes_it(
    reference: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "capped"
    assert compare(folder, "--max-requests", "250") == 1  # the first cell needs 192
    out = capsys.readouterr().out
    assert f"continue with: numericjev resume {folder}" in out
    assert not (folder / "summary.md").exists()
    assert cli("status", str(folder)) == 0
    status = capsys.readouterr().out.splitlines()
    assert "INCOMPLETE" in status[0] and len(status) == 5
    assert "requests 250 " in status[0] and "  not started  " in status[-1]
    assert "started not started" not in status[-1]
    assert cli("resume", str(folder), "--no-progress", "--max-requests", "10000") == 0
    assert summary(folder) == summary(reference)


def test_a_compressed_comparison_resumed_compresses_the_cells_it_starts(
    reference: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "packed"
    assert compare(folder, "--compress", "--max-requests", "250") == 1  # cells 3 and 4 not begun
    assert cli("resume", str(folder), "--no-progress") == 0
    for cell in CELLS:
        assert (folder / cell / "requests.jsonl.zst").is_file(), cell
        assert not (folder / cell / "requests.jsonl").exists(), cell
    assert summary(folder) == summary(reference)


def test_resume_of_a_comparison_takes_concurrency_and_rps_for_every_unfinished_cell(
    reference: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "paced"
    assert compare(folder, "--max-requests", "250") == 1  # cell 1 done, 2 cut, 3 and 4 not begun
    for option in (
        ["--base-url", "http://127.0.0.1:9"],
        ["--allow-mismatch"],
        ["--price-per-million", "1"],
        ["--max-wait-seconds", "5"],
    ):
        capsys.readouterr()
        assert cli("resume", str(folder), *option) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and f"(numericjev resume {folder}/<run> {option[0]} ...)" in err[0]
    paced = ["--concurrency", "3", "--rps", "100000"]
    assert cli("resume", str(folder), "--no-progress", *paced) == 0
    for cell in CELLS[1:]:  # resumed, or started by the resume
        limits = records(folder / cell / "sessions.jsonl")[-1]["limits"]
        assert (limits["concurrency"], limits["rps"]) == (3, 100000)
    first = records(folder / CELLS[0] / "sessions.jsonl")
    assert [s["limits"]["concurrency"] for s in first] == [64]  # finished before: untouched
    assert summary(folder) == summary(reference)  # the pace changed no answer


def test_cells_are_found_by_the_names_compare_json_records(reference: Path, tmp_path: Path) -> None:
    # A comparison made by an older harness named its cells otherwise (a served model's
    # server in the name): resume finds each cell where compare.json says, never anew.
    folder = tmp_path / "older"
    assert compare(folder, "--max-requests", "100") == 1  # the first cell cut short
    record = orjson.loads((folder / "compare.json").read_bytes())
    old = "exploratory-m1-sim_base_url_http___127.0.0.1_8377"
    (folder / record["cells"][0]["folder"]).rename(folder / old)
    record["cells"][0]["folder"] = old
    (folder / "compare.json").write_bytes(orjson.dumps(record))
    assert cli("resume", str(folder), "--no-progress") == 0
    assert sorted(p.name for p in folder.iterdir() if p.is_dir()) == sorted([old, *CELLS[1:]])
    assert final_outputs(folder / old) == final_outputs(reference / CELLS[0])


def test_a_clearly_worse_model_is_called_worse(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "worse"
    # Every arithmetic result ten cells off; NMAE, since MAPE on 16 families is ruled by the
    # near-zero targets of the -50 domain (as in the paper) and calls few cells either way.
    # --test t: the t's power at 16 families; the default bootstrap-t calls fewer of these
    # cells (its cost in power, docs/comparing.md), and never a false one.
    args = ["compare", "--models", "sim,sim:slip_ten=1", "--suites", "affine", "--metric",
            "nmae", "--param", "per_operator=4", "--out", str(folder), "--no-progress",
            "--json", "--test", "t"]  # fmt: skip
    assert cli(*args) == 0
    printed = orjson.loads(capsys.readouterr().out)  # stdout is the JSON alone
    assert printed["test"]["promise"] == "level measured on exchangeable pairs only"
    assert "level measured on exchangeable pairs only" in (folder / "summary.md").read_text()
    assert printed["rows"] == rows(folder)
    verdicts = {(r["decoder"], r["condition"]): r["verdict"] for r in rows(folder)}
    assert {v for (_, c), v in verdicts.items() if c == "arithmetic"} == {"worse"}
    assert {v for (_, c), v in verdicts.items() if c == "provided"} == {"no clear difference"}
    assert printed["verdicts"] == {"worse": 6, "no clear difference": 6}


def test_the_release_gate_exits_3_naming_the_cells_shown_worse_by_more_than_the_margin(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["compare", "--models", "sim,sim:slip_ten=1", "--suites", "affine", "--metric",
            "nmae", "--param", "per_operator=4", "--no-progress", "--fail-on-worse",
            "--test", "t"]  # fmt: skip
    assert cli(*base, "--out", str(tmp_path / "gate")) == 3
    err = capsys.readouterr().err
    assert "release gate failed: 6 cell(s) worse than sim by more than 0" in err
    gate = orjson.loads((tmp_path / "gate" / "summary.json").read_bytes())["gate"]
    assert {row["condition"] for row in gate["failed"]} == {"arithmetic"}
    assert "fails the gate" in (tmp_path / "gate" / "summary.md").read_text()
    # The same harm inside a generous margin passes (the gate tests "worse by more than M").
    assert cli(*base, "--margin", "1000", "--out", str(tmp_path / "loose")) == 0
    gate = orjson.loads((tmp_path / "loose" / "summary.json").read_bytes())["gate"]
    assert gate == {"margin": 1000.0, "failed": []}


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--models", "sim,oracle", "--suites", "affine", "--margin", "1"], "add --fail-on-worse"),
        (
            ["--models", "sim,oracle", "--suites", "affine", "--fail-on-worse", "--margin", "-1"],
            "--margin must be 0 or more",
        ),
        (["--models", "sim", "--suites", "affine"], "two or more models"),
        (["--models", "sim,sim", "--suites", "affine"], "'sim' is listed twice"),
        (["--models", "sim,sim:speed=2", "--suites", "affine"], "sim has no knob 'speed'"),
        (["--models", "sim,oracle", "--suites", "nope"], "unknown suite 'nope'"),
        (
            ["--models", "sim,oracle", "--suites", "affine", "--param", "x.cells=200"],
            "'x' is not one of --suites",
        ),
        (["--models", "sim,jev-latest", "--suites", "affine"], "needs a key"),
    ],
)
def test_bad_input_is_refused_before_anything_is_written(
    extra: list[str],
    message: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TYPESAFE_API_KEY", raising=False)
    monkeypatch.delenv("TYPESAFE_BASE_URL", raising=False)
    assert cli("compare", *extra) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "runs").exists()


def test_out_naming_a_file_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    taken = tmp_path / "notes.md"
    taken.write_text("mine\n")
    assert (
        cli("compare", "--models", "sim,oracle", "--suites", "exploratory", "--out", str(taken))
        == 2
    )
    err = capsys.readouterr().err
    assert "is a file, not a folder" in err and len(err.strip().splitlines()) == 1
    assert taken.read_text() == "mine\n"


def test_lar_is_judged_and_a_clearly_worse_model_is_called_worse_on_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "lar"
    args = ["compare", "--models", "sim,sim:slip_ten=1", "--suites", "affine", "--metric",
            "lar", "--param", "per_operator=4", "--out", str(folder), "--no-progress",
            "--json"]  # fmt: skip
    assert cli(*args) == 0
    printed = orjson.loads(capsys.readouterr().out)
    assert "LAR ×100" in (folder / "summary.md").read_text()
    assert printed["test"]["name"] == "bootstrap_t"  # the default verdict test, and its promise
    assert "A/A pair" in printed["test"]["promise"]
    verdicts = {(r["decoder"], r["condition"]): r["verdict"] for r in rows(folder)}
    assert "better" not in verdicts.values()
    assert {v for (_, c), v in verdicts.items() if c == "provided"} == {"no clear difference"}
    assert printed["verdicts"].get("worse", 0) >= 1
