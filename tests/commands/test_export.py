"""``numericjev export``: the run's logs as tables that DuckDB opens with the logs' row counts
and the main table's numbers."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import duckdb
import orjson
import pytest

from runfolder import JsonlReader
from tests.runhelpers import SMALL, cli


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("export") / "run"
    # The sim, compressed: answers with probabilities, and logs stored as zstd frames.
    args = ("run", *SMALL, "--run", str(folder), "--compress", "--no-progress")
    assert cli(*args) == 0
    return folder


def test_the_tables_open_in_duckdb_with_the_logs_row_counts(run: Path) -> None:
    assert cli("export", str(run)) == 0
    out = run / "export"
    sql = duckdb.connect()
    count = {t: sql.execute(f"SELECT count(*) FROM '{out}/{t}.parquet'").fetchone()[0] for t in
             ("exchanges", "outputs", "answers")}  # fmt: skip
    exchanges = list(JsonlReader[dict](run / "requests.jsonl"))
    assert count["exchanges"] == len(exchanges)
    assert count["outputs"] == len({(r["job"], r["decoder"]) for r in
                                    JsonlReader[dict](run / "outputs.jsonl")})  # fmt: skip
    answered = sum(len(e["response"]["answers"]) for e in exchanges if e["error"] is None)
    assert count["answers"] == answered > count["exchanges"]
    # Every chosen label's probability is the one the model gave.
    low = sql.execute(
        f"SELECT min(p_choice), max(p_choice) FROM '{out}/answers.parquet'"
    ).fetchone()
    assert 0.0 < low[0] <= low[1] <= 1.0


def test_duckdb_reproduces_a_number_of_the_main_table(
    run: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    out = run / "export"
    if not (out / "outputs.parquet").exists():
        assert cli("export", str(run)) == 0
    sql = duckdb.connect()
    mape = sql.execute(
        f"SELECT avg(ape) FROM '{out}/outputs.parquet' "
        "WHERE status = 'ok' AND decoder = 'direct' AND condition = 'arithmetic'"
    ).fetchone()[0]
    capsysbinary.readouterr()
    assert cli("analyze", str(run), "--json", "--no-probabilities") == 0
    cells = orjson.loads(capsysbinary.readouterr().out)["cells"]
    cell = next(c for c in cells if c["decoder"] == "direct" and c["condition"] == "arithmetic")
    assert math.isclose(mape, cell["mape"]["value"], rel_tol=1e-12)


def test_csv_holds_the_same_rows(run: Path, tmp_path: Path) -> None:
    assert cli("export", str(run), "--format", "csv", "--out", str(tmp_path)) == 0
    sql = duckdb.connect()
    rows = sql.execute(f"SELECT count(*) FROM read_csv('{tmp_path}/outputs.csv')").fetchone()[0]
    parquet = run / "export" / "outputs.parquet"
    if parquet.exists():
        assert rows == sql.execute(f"SELECT count(*) FROM '{parquet}'").fetchone()[0]
    assert rows > 0


def test_bad_input_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli("export", str(tmp_path / "nothing")) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_without_pyarrow_the_install_command_named_works_from_a_clone(
    run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # make run installs the runtime only; numericjev is on no registry, so
    # pip install 'numericjev[export]' cannot work: the clone's own venv installs the extra.
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow raises ImportError
    assert cli("export", str(run), "--out", str(tmp_path / "x")) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert ".venv/bin/pip install -e '.[export]'" in err and "numericjev[" not in err
    assert not (tmp_path / "x").exists()
