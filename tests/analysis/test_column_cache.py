"""The columns kept in RUN/.columns/: read back only while the logs are unchanged, and
never a different answer from reading the logs."""

from __future__ import annotations

import contextlib
import io
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import analysis.loading.cache.run_columns as run_columns
import analysis.loading.viewer.rounds as rounds_module
from analysis.cli import main as analysis_main
from analysis.loading.cache import column_cache
from analysis.loading.cache.column_cache import CACHE_DIR, CACHE_ENV, RUN_LOGS, cache_key, keep
from analysis.loading.run import load_run
from analysis.loading.viewer.rounds import load_rounds
from tests.runhelpers import SMALL, cli


@pytest.fixture(autouse=True)
def _cache_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CACHE_ENV, "on")


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("runs") / "affine"
    assert cli("run", "--run", str(folder), "--no-progress", "--suite", "affine", *SMALL) == 0
    return folder


@pytest.fixture
def run_dir(finished: Path, tmp_path: Path) -> Path:
    """A fresh copy of the finished run, nothing kept yet."""
    copy = tmp_path / "run"
    shutil.copytree(finished, copy, ignore=shutil.ignore_patterns(CACHE_DIR))
    return copy


def _analyze(*argv: str) -> str:
    """``analyze`` printed as markdown (every table, the Probabilities section included)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert analysis_main(["analyze", *argv, "--bootstrap", "200"]) == 0
    return out.getvalue()


def _no_log_reading(monkeypatch: pytest.MonkeyPatch) -> None:
    """From here on, reading a log for columns fails the test."""

    def refuse(*_: Any) -> None:
        raise AssertionError("the logs were read although their columns are kept")

    monkeypatch.setattr(run_columns, "read_logs", refuse)
    monkeypatch.setattr(rounds_module, "_read_rounds", refuse)


def test_kept_columns_give_the_same_analysis_as_the_logs(
    run_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fresh = _analyze(str(run_dir), "--no-cache")
    assert not (run_dir / CACHE_DIR).exists()  # --no-cache keeps nothing
    first = _analyze(str(run_dir))  # reads the logs and keeps the columns
    assert {p.name for p in (run_dir / CACHE_DIR).iterdir()} == {"logs.npz", "answers.npz"}
    _no_log_reading(monkeypatch)
    assert _analyze(str(run_dir)) == first == fresh


def test_kept_job_rounds_equal_the_logs(run_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    read = rounds_module._read_rounds(run_dir)
    load_rounds(run_dir)  # keeps them
    _no_log_reading(monkeypatch)
    kept = load_rounds(run_dir)
    for name, value in vars(read).items():
        other = getattr(kept, name)
        assert type(other) is type(value), name
        if hasattr(value, "typecode"):
            assert value.typecode == other.typecode and value.tobytes() == other.tobytes(), name
        elif name == "probabilities":
            np.testing.assert_array_equal(value, other)
        else:
            assert other == value, name


def test_a_changed_log_is_read_again(run_dir: Path) -> None:
    load_run(run_dir)
    outputs = run_dir / "outputs.jsonl"
    lines = outputs.read_bytes().splitlines(keepends=True)
    outputs.write_bytes(b"".join(lines[:-1]))  # the last output gone, as if never written
    assert len(load_run(run_dir).outputs) == len(lines) - 1


def test_a_compacted_run_is_read_again_with_the_same_result(
    run_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from runfolder.compact import compact_run

    plain = _analyze(str(run_dir))
    compact_run(run_dir)
    assert not (run_dir / "requests.jsonl").exists()
    assert _analyze(str(run_dir)) == plain  # new key (the .zst logs): read, then kept
    _no_log_reading(monkeypatch)
    assert _analyze(str(run_dir)) == plain


def test_a_damaged_kept_file_is_ignored_and_replaced(run_dir: Path) -> None:
    expected = _analyze(str(run_dir))
    kept = run_dir / CACHE_DIR / "logs.npz"
    kept.write_bytes(b"PK\x03\x04 not a zip archive")
    assert _analyze(str(run_dir)) == expected
    with np.load(kept, allow_pickle=False) as data:  # rewritten whole
        assert "__spec__" in data.files


def test_a_folder_that_cannot_keep_columns_still_analyses(run_dir: Path) -> None:
    (run_dir / CACHE_DIR).write_text("a file where the folder would go")
    expected = _analyze(str(run_dir), "--no-cache")
    assert _analyze(str(run_dir)) == expected
    assert (run_dir / CACHE_DIR).read_text() == "a file where the folder would go"


def test_the_environment_switch_keeps_nothing(
    run_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CACHE_ENV, "off")
    _analyze(str(run_dir))
    assert not (run_dir / CACHE_DIR).exists()


def test_a_log_that_grows_while_read_is_not_kept(run_dir: Path) -> None:
    key = cache_key(run_dir, RUN_LOGS)
    run = load_run(run_dir)
    with (run_dir / "requests.jsonl").open("ab") as handle:  # a resume appends meanwhile
        handle.write(b'{"job": "late", "round": 1}\n')
    assert keep(run_dir, "logs", key, (run.outputs, run.requests)) is None


def test_the_option_orders_are_part_of_the_answers_key(
    run_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paired = load_run(run_dir, probabilities=True)
    swapped = load_run(run_dir, probabilities=True, orders=("reversed", "ascending"))
    assert paired.answers is not None and swapped.answers is not None
    np.testing.assert_array_equal(paired.answers.pair_first, swapped.answers.pair_second)
    _no_log_reading(monkeypatch)  # the last orders asked are kept
    again = load_run(run_dir, probabilities=True, orders=("reversed", "ascending"))
    assert again.answers is not None
    np.testing.assert_array_equal(again.answers.pair_first, swapped.answers.pair_first)


def test_a_change_to_any_loading_module_changes_the_key(
    run_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The code digest covers every module of analysis/loading, its subpackages' too (the
    cache's own module sits in one of them): an edit to the join rebuilds the kept files."""
    copy = tmp_path / "loading"
    source = Path(column_cache.__file__).parents[1]
    shutil.copytree(source, copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(column_cache, "_LOADING", copy)
    column_cache._code_digest.cache_clear()
    try:
        before = cache_key(run_dir, RUN_LOGS)
        joined = copy / "probabilities" / "answers.py"
        joined.write_text(joined.read_text() + "# an edit\n")
        column_cache._code_digest.cache_clear()
        assert cache_key(run_dir, RUN_LOGS) != before
    finally:
        column_cache._code_digest.cache_clear()  # later tests key by the real code
