"""Every benchmark in miniature: a broken bench fails here, not first in ``make bench``.

Each module is imported (a bench whose imports broke fails), and every bench in ``BENCHES``
runs whole at a tiny size: on one tiny sim run (128 jobs) standing in for the 1x and 100x
ones, with the affine suite at ``per_operator=1`` where a bench runs the suite itself, and a
few replicates where it resamples. The figures are not checked (they are the machine's):
only that each bench runs to the end and returns them. The 1000x part of ``bench_first_reads``
and the ``--peers`` part of ``bench_spread`` need what CI does not make (a 38-minute run, a
venv with Inspect AI): they say they skipped, and are not run here.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import benchmarks
from tests.runhelpers import SMALL, cli, copy_run

TINY = {"per_operator": "2"}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("bench") / "tiny"
    assert cli("run", *SMALL, "--run", str(folder), "--no-progress") == 0
    return folder


@pytest.mark.parametrize("name", [m.name for m in pkgutil.iter_modules(benchmarks.__path__)])
def test_every_benchmark_imports(name: str) -> None:
    importlib.import_module(f"benchmarks.{name}")


SUITE = {"per_operator": "1"}  # the affine suite's 64 jobs, for a bench that runs it


def _bench(name: str) -> Any:
    return importlib.import_module(f"benchmarks.{name}")


def _own_copy(run: Path, tmp: Path) -> Path:
    # A bench that keeps columns beside a run (or deletes them) works on a copy of its own.
    return copy_run(run, tmp / "run")


def _comparison(tmp: Path) -> Path:
    out = tmp / "comparison"
    assert cli("compare", "--models", "sim,sim:confusion=0.3", "--suites", "affine", *SMALL,
               "--out", str(out), "--bootstrap", "200", "--no-progress") == 0  # fmt: skip
    return out


def _calibration(tmp: Path) -> dict[str, Any]:
    # The study's A/A and steady rows at 10 runs per arm (the spread flag's steady k=9 null
    # needs 10), 3 comparisons per row, 8 families; then the spread flag on the same pool.
    cache = ["--cache", str(tmp / "pools"), "--runs", "10", "--families", "8"]
    study = ["--replicates", "3", "--steady", "2", "--scenarios", "aa,steady", "--looks"]
    code = _bench("bench_calibration").main([*cache, *study])
    flag = _bench("bench_spread_flag").main([*cache, "--replicates", "2", "--flips", "99"])
    return {"calibration_exit": code, "spread_flag_exit": flag}


def _main_sections(run: Path, tmp: Path) -> dict[str, Any]:
    main = _bench("__main__")
    copy = _own_copy(run, tmp)
    return {**main.bench_inprocess(tmp, SUITE), **main.bench_resume(copy.parent, copy.name)}


def _scores(run: Path, tmp: Path) -> dict[str, Any]:
    from benchmarks.bench_scores import lines
    from benchmarks.bench_scores import run as bench

    figures = bench(run, run, tmp)  # the tiny run standing in for both 1x and 100x
    assert lines(figures)
    return figures


BENCHES: dict[str, Callable[[Path, Path], dict[str, Any]]] = {
    "__main__": _main_sections,
    "bench_analysis": lambda run, tmp: _bench("bench_analysis").run(families=2, replicates=50),
    "bench_cache": lambda run, tmp: _bench("bench_cache").run(tmp, SUITE),
    "bench_calibration": lambda run, tmp: _calibration(tmp),
    "bench_first_reads": lambda run, tmp: {
        k: v
        for k, v in _bench("bench_first_reads").run(_own_copy(run, tmp), tmp, repeats=1).items()
        if k != "analyze_1000x_skipped"
    },
    "bench_html": lambda run, tmp: _bench("bench_html").run({"1x": _own_copy(run, tmp)}),
    "bench_http": lambda run, tmp: _bench("bench_http").run(tmp, (64,), 1, SUITE),
    "bench_logs": lambda run, tmp: _bench("bench_logs").run(run, run, tmp, params=TINY),
    "bench_overhead": lambda run, tmp: _bench("bench_overhead").run(
        tmp, (16,), (0.0,), repeats=1, params=SUITE
    ),
    "bench_probe": lambda run, tmp: _bench("bench_probe").run(tmp, params=SUITE),
    "bench_probabilities": lambda run, tmp: _bench("bench_probabilities").run(run, run),
    "bench_reading": lambda run, tmp: _bench("bench_reading").run(_own_copy(run, tmp), tmp),
    "bench_sequential": lambda run, tmp: {
        "exit": _bench("bench_sequential").main([str(_comparison(tmp)), "--orders", "2"])
    },
    "bench_serve": lambda run, tmp: _bench("bench_serve").run(tmp, requests=64),
    "bench_spread": lambda run, tmp: _bench("bench_spread").run(
        tmp, quick=True, with_peers=False, params=SUITE
    ),
    "bench_wires": lambda run, tmp: _bench("bench_wires").run(tmp, params=SUITE),
    "bench_scores": _scores,
}


def test_every_bench_module_has_a_miniature() -> None:
    helpers = {
        "calibration_intervals",
        "calibration_nulls",
        "processes",
        "same_questions",
        "sim_runs",
    }
    # bench_spread_flag reads bench_calibration's pool: both run in its miniature.
    covered = set(BENCHES) | {"bench_spread_flag"}
    modules = {m.name for m in pkgutil.iter_modules(benchmarks.__path__)} | {"__main__"}
    assert modules - helpers == covered


# Each bench starts fresh interpreters (and servers): seconds each on a quiet machine, but
# ten times that beside other work. The limit only catches a hang.
@pytest.mark.timeout(900)
@pytest.mark.parametrize("name", sorted(BENCHES))
def test_each_benchmark_runs_on_a_tiny_run(name: str, tiny: Path, tmp_path: Path) -> None:
    figures = BENCHES[name](tiny, tmp_path)
    assert figures and not any("skipped" in key for key in figures), figures
    assert all(v == 0 for k, v in figures.items() if k.endswith("exit")), figures
