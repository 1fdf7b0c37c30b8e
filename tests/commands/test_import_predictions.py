"""External predictions become one more decoder of a run folder, or nothing is written."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from tests.runhelpers import SMALL, cli, copy_run, records


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The small run, made once for the module."""
    folder = tmp_path_factory.mktemp("pristine") / "run"
    assert cli("run", *SMALL, "--run", str(folder), "--no-progress") == 0
    return folder


@pytest.fixture()
def run_folder(pristine: Path, tmp_path: Path) -> Path:
    """A copy of the small run of the test's own, to import into."""
    return copy_run(pristine, tmp_path / "run")


def write_predictions(path: Path, rows: list[dict]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    return path


def every_case(folder: Path) -> list[dict]:
    seen = {(r["case"], r["condition"], r["target"]) for r in records(folder / "outputs.jsonl")}
    return [{"case": c, "condition": k, "value": float(t) * 1.1} for c, k, t in sorted(seen)]


def test_import_adds_a_decoder_for_every_job(run_folder: Path, tmp_path: Path) -> None:
    rows = every_case(run_folder)
    path = write_predictions(tmp_path / "p.jsonl", rows)
    before = len(records(run_folder / "outputs.jsonl"))
    assert cli("import-predictions", str(run_folder), str(path), "--name", "spline4b") == 0
    added = [r for r in records(run_folder / "outputs.jsonl") if r["decoder"] == "spline4b"]
    assert len(added) == len(rows) * 2  # no order given: both orders get the prediction
    assert len(records(run_folder / "outputs.jsonl")) == before + len(added)
    assert all(r["status"] == "ok" and r["imported"]["file"] == "p.jsonl" for r in added)
    # The run itself is untouched: resume still has nothing to send.
    size = (run_folder / "requests.jsonl").stat().st_size
    assert cli("resume", str(run_folder), "--no-progress") == 0
    assert (run_folder / "requests.jsonl").stat().st_size == size


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda rows: [{**rows[0], "case": "f999/int"}, *rows[1:]], "is not in suite"),
        (lambda rows: [{**rows[0], "condition": "telepathy"}, *rows[1:]], "condition"),
        (lambda rows: [*rows, rows[0]], "two predictions"),
        (lambda rows: rows[1:], "--allow-partial"),
        (lambda rows: [{**rows[0], "value": "abc"}, *rows[1:]], "not a number"),
    ],
)
def test_bad_predictions_write_nothing(
    run_folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], mutate, message: str
) -> None:
    path = write_predictions(tmp_path / "bad.jsonl", mutate(every_case(run_folder)))
    before = (run_folder / "outputs.jsonl").read_bytes()
    assert cli("import-predictions", str(run_folder), str(path), "--name", "head") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]
    assert (run_folder / "outputs.jsonl").read_bytes() == before


def test_name_must_not_shadow_a_decoder(run_folder: Path, tmp_path: Path) -> None:
    path = write_predictions(tmp_path / "p.jsonl", every_case(run_folder))
    assert cli("import-predictions", str(run_folder), str(path), "--name", "tree10") == 2


def test_importing_a_file_again_appends_nothing_and_another_file_says_it_replaces(
    run_folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = every_case(run_folder)
    first = write_predictions(tmp_path / "p.jsonl", rows)
    assert cli("import-predictions", str(run_folder), str(first), "--name", "spline4b") == 0
    log = (run_folder / "outputs.jsonl").read_bytes()
    capsys.readouterr()
    assert cli("import-predictions", str(run_folder), str(first), "--name", "spline4b") == 0
    assert "already imported" in capsys.readouterr().out
    assert (run_folder / "outputs.jsonl").read_bytes() == log
    second = write_predictions(tmp_path / "q.jsonl", [{**r, "value": r["value"] * 2} for r in rows])
    assert cli("import-predictions", str(run_folder), str(second), "--name", "spline4b") == 0
    assert "replace" in capsys.readouterr().out
    added = [r for r in records(run_folder / "outputs.jsonl") if r["decoder"] == "spline4b"]
    assert len(added) == 4 * len(rows)  # both orders, two files: the earlier lines stay


def _analyzed(folder: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> str:
    capsys.readouterr()
    assert cli("analyze", str(folder), "--bootstrap", "50", "--no-probabilities", *extra) == 0
    return capsys.readouterr().out


def test_an_order_free_head_has_no_ordering_gap_in_any_output(
    run_folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_predictions(tmp_path / "p.jsonl", every_case(run_folder))
    assert cli("import-predictions", str(run_folder), str(path), "--name", "spline4b") == 0
    cells = orjson.loads(_analyzed(run_folder, capsys, "--json"))["cells"]
    mine = [c for c in cells if c["decoder"] == "spline4b"]
    assert mine and all(c["ordering_gap"]["value"] is None for c in mine)  # n/a, not 0.00
    assert all(
        c["ordering_gap"]["n"] == 0 and c["vs_direct"]["ordering_gap"]["diff"] is None for c in mine
    )
    # The run's own decoders keep theirs.
    assert all(c["ordering_gap"]["n"] > 0 for c in cells if c["decoder"] == "direct")


@pytest.mark.parametrize("simulated", [False, True])
def test_the_transfer_title_says_simulated_only_for_the_sims_head(
    run_folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], simulated: bool
) -> None:
    path = write_predictions(tmp_path / "p.jsonl", every_case(run_folder))
    flag = ["--simulated"] if simulated else []
    assert cli("import-predictions", str(run_folder), str(path), "--name", "spline4b", *flag) == 0
    out = _analyzed(run_folder, capsys)
    title = next(line for line in out.splitlines() if line.startswith("### Continuous-head"))
    assert ("SIMULATED" in title) is simulated
    # The run's own tables stay marked: its model is the sim.
    assert "SIMULATED" in next(line for line in out.splitlines() if line.startswith("### Fixed"))
