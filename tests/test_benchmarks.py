"""Every benchmark in miniature: a broken bench fails here, not first in ``make bench``.

Each module is imported (a bench whose imports broke fails), and the benches listed in
``BENCHES`` run whole on one tiny sim run (128 jobs) standing in for the 1x and 100x ones.
The figures are not checked: only that each bench runs to the end and returns them. (The
other benches have no size to make small yet: each still runs only in ``make bench``.)
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import benchmarks
from tests.runhelpers import SMALL, cli

TINY = {"per_operator": "2"}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("bench") / "tiny"
    assert cli("run", *SMALL, "--run", str(folder), "--no-progress") == 0
    return folder


@pytest.mark.parametrize("name", [m.name for m in pkgutil.iter_modules(benchmarks.__path__)])
def test_every_benchmark_imports(name: str) -> None:
    importlib.import_module(f"benchmarks.{name}")


def _logs(run: Path, tmp: Path) -> dict[str, Any]:
    from benchmarks.bench_logs import run as bench

    return bench(run, run, tmp, params=TINY)


def _scores(run: Path, tmp: Path) -> dict[str, Any]:
    from benchmarks.bench_scores import lines
    from benchmarks.bench_scores import run as bench

    figures = bench(run, run, tmp)  # the tiny run standing in for both 1x and 100x
    assert lines(figures)
    return figures


BENCHES: dict[str, Callable[[Path, Path], dict[str, Any]]] = {
    "bench_logs": _logs,
    "bench_scores": _scores,
}


@pytest.mark.parametrize("name", sorted(BENCHES))
def test_each_benchmark_runs_on_a_tiny_run(name: str, tiny: Path, tmp_path: Path) -> None:
    figures = BENCHES[name](tiny, tmp_path)
    assert figures and not any("skipped" in key for key in figures), figures
