"""Benchmark: issue 29's three analysis goals, this tree beside main's on the same folders.

Each figure is one ``numericjev`` command in a fresh interpreter on a hard-link copy of the
run folder (the given folder is never written: ``analyze`` keeps columns in ``RUN/.columns``),
each a first read (nothing kept yet), and its peak RSS is the whole process tree's: the
command's own and that of the second process that reads requests.jsonl beside it
(``side_by_side``), sampled every 20 ms and never below either process's own peak.

- ``analyze`` at 100× with the Probabilities section (goal: under 15 s, judged on the median
  of ``--repeats`` first reads, main's and this tree's alternated) and without it;
- ``report`` at 100× (goal: under 300 MB; the run's columns kept by the ``analyze`` before);
- ``analyze`` at 1000× with and without the Probabilities section (goal: under 1 GB) when
  a 1000× folder is given (``--x1000 PATH`` or ``NUMERICJEV_BENCH_1000X``): it takes 38 min
  to make and a first read of it takes minutes, so the bench never makes one and says it
  skipped.

"Main" is git revision ``MAIN`` (issue 29's read as three engineers found it), extracted and
run on the same copies. ``analyze`` runs with 1,000 bootstrap replicates.
Run alone: ``python -m benchmarks.bench_first_reads [--x100 PATH] [--x1000 PATH]`` (without
``--x100`` the 100× sim run is made first, about ten minutes).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import orjson

from benchmarks.processes import child, extract

__all__ = ["GOALS", "MAIN", "WALL_REPEATS", "X1000_ENV", "hard_link_copy", "run"]

MAIN = "4ed3a13"  # main when issue 29's first-read work was split in three
# First-read walls of the 100x analyze per tree, main's and this one's alternated: the goal
# is judged on their median (a lone run's wall swung 10.7-16.4 s in one quiet afternoon).
WALL_REPEATS = 3
X1000_ENV = "NUMERICJEV_BENCH_1000X"
# (figure, goal, unit): what each measurement must stay under.
GOALS = {
    "analyze_100x_wall_s": (15.0, "s"),
    "report_100x_peak_rss_mb": (300.0, "MB"),
    "analyze_1000x_peak_rss_mb": (1024.0, "MB"),
}

_COMMAND = """
import contextlib, io, os, resource, threading, time, orjson
from analysis.cli import main
_PAGE = os.sysconf("SC_PAGE_SIZE")
def tree_rss():
    total, pids = 0, [os.getpid()]
    while pids:
        pid = pids.pop()
        try:
            with open(f"/proc/{{pid}}/statm") as f:
                total += int(f.read().split()[1]) * _PAGE
            for task in os.listdir(f"/proc/{{pid}}/task"):
                with open(f"/proc/{{pid}}/task/{{task}}/children") as f:
                    pids += [int(p) for p in f.read().split()]
        except OSError:
            pass
    return total
peak, done = [0], threading.Event()
def sample():
    while not done.wait(0.02):
        peak[0] = max(peak[0], tree_rss())
sampler = threading.Thread(target=sample, daemon=True)
sampler.start()
t0 = time.perf_counter()
with contextlib.redirect_stdout(io.StringIO()):
    code = main({argv!r})
assert code == 0
wall = time.perf_counter() - t0
done.set()
sampler.join()
own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
worker = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
rss = max(peak[0], own, worker) / 2**20
print(orjson.dumps({{"wall_s": wall, "peak_rss_mb": rss}}).decode())
"""


def hard_link_copy(folder: Path, into: Path) -> Path:
    """``folder``'s files (not its kept columns) linked into a new folder ``into``: the logs
    are shared, never written, and what ``analyze`` keeps goes into the copy."""
    into.mkdir(parents=True)
    for path in folder.iterdir():
        if path.is_file():
            try:
                os.link(path, into / path.name)
            except OSError:  # another file system: a symbolic link reads the same
                (into / path.name).symlink_to(path.resolve())
    return into


def _measure(argv: list[str], tree: Path | None) -> dict[str, float]:
    found = child(_COMMAND.format(argv=argv), tree)
    return {"wall_s": round(found["wall_s"], 2), "peak_rss_mb": round(found["peak_rss_mb"], 1)}


def _both(
    folder: Path, tmp: Path, main_tree: Path, commands: dict[str, list[str]]
) -> dict[str, Any]:
    """Each command on a fresh copy of ``folder``, main's tree then this one's."""
    out: dict[str, Any] = {}
    for tree, suffix in ((main_tree, "_main"), (None, "")):
        copy = tmp / f"copy{suffix}"
        shutil.rmtree(copy, ignore_errors=True)
        hard_link_copy(folder, copy)
        for name, argv in commands.items():  # in order: report after the analyze
            args = [a.replace("{run}", str(copy)).replace("{tmp}", str(tmp)) for a in argv]
            found = _measure(args, tree)
            for key, value in found.items():
                out[f"{name}_{key}{suffix}"] = value
        shutil.rmtree(copy, ignore_errors=True)
    return out


def _walls(
    folder: Path, tmp: Path, main_tree: Path, argv: list[str], repeats: int
) -> dict[str, Any]:
    """``argv``'s first-read wall, main's tree and this one's alternated ``repeats`` times
    (each on a fresh copy): each tree's median, judged against the goal, and every run."""
    walls: dict[str, list[float]] = {"_main": [], "": []}
    for _ in range(repeats):
        for tree, suffix in ((main_tree, "_main"), (None, "")):
            copy = tmp / f"wall{suffix}"
            shutil.rmtree(copy, ignore_errors=True)
            hard_link_copy(folder, copy)
            found = _measure([a.replace("{run}", str(copy)) for a in argv], tree)
            walls[suffix].append(found["wall_s"])
            shutil.rmtree(copy, ignore_errors=True)
    out: dict[str, Any] = {}
    for suffix, runs in walls.items():
        out[f"analyze_100x_wall_s{suffix}"] = round(statistics.median(runs), 2)
        out[f"analyze_100x_wall_s_runs{suffix}"] = runs
    return out


def run(
    hundred: Path, tmp: Path, thousand: Path | None = None, repeats: int = WALL_REPEATS
) -> dict[str, Any]:
    """The goals' figures on the 100× run ``hundred`` (and the 1000× run ``thousand``)."""
    main_tree = extract(MAIN, tmp / "main", ("runfolder", "analysis"))
    analyze = ["analyze", "{run}", "--bootstrap", "1000"]
    out = _both(
        hundred,
        tmp,
        main_tree,
        {
            "analyze_100x": analyze,
            "analyze_100x_no_probabilities": [*analyze, "--no-probabilities", "--no-cache"],
            "report_100x": ["report", "{run}", "--bootstrap", "1000", "--out", "{tmp}/report"],
        },
    )
    # The wall goal is judged on a median: one run's wall on a shared VM drifts by a third.
    out.update(_walls(hundred, tmp, main_tree, analyze, repeats))
    thousand = thousand or (Path(os.environ[X1000_ENV]) if os.environ.get(X1000_ENV) else None)
    if thousand is None:
        out["analyze_1000x_skipped"] = (
            f"no 1000x run folder given (--x1000 PATH or {X1000_ENV}; making one takes 38 min)"
        )
    else:
        out.update(
            _both(
                thousand,
                tmp,
                main_tree,
                {
                    "analyze_1000x": [*analyze, "--no-cache"],
                    "analyze_1000x_no_probabilities": [
                        *analyze,
                        "--no-cache",
                        "--no-probabilities",
                    ],
                },
            )
        )
    for name in [k for k in out if k.endswith("_main")]:
        now = out.get(name[: -len("_main")])
        if isinstance(now, float) and out[name]:
            out[name[: -len("_main")] + "_over_main"] = round(now / out[name], 3)
    return out


def lines(figures: dict[str, Any]) -> list[str]:
    """This tree's figures, each beside main's and its goal (met or not)."""
    shown = []
    for key, value in figures.items():
        if key.endswith(("_main", "_over_main", "_runs")):
            continue
        line = f"{key}: {value}"
        if f"{key}_runs" in figures:  # a median: its runs, this tree's and main's
            line += f" (median of {figures[f'{key}_runs']}; main's {figures[f'{key}_runs_main']})"
        if f"{key}_main" in figures:
            line += f" (main {figures[f'{key}_main']}, x{figures.get(f'{key}_over_main')})"
        if key in GOALS:
            goal, unit = GOALS[key]
            line += f"  goal: under {goal:g} {unit}: {'met' if value < goal else 'NOT met'}"
        shown.append(line)
    return shown


def main() -> None:
    """Measure, print each figure with its goal, then one JSON line."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_first_reads")
    parser.add_argument(
        "--x100", type=Path, help="a 100x affine sim run folder (default: make one)"
    )
    parser.add_argument("--x1000", type=Path, help=f"a 1000x run folder (or {X1000_ENV})")
    parser.add_argument(
        "--repeats",
        type=int,
        default=WALL_REPEATS,
        help=f"first-read walls of the 100x analyze per tree, alternated (default {WALL_REPEATS})",
    )
    args = parser.parse_args()
    if args.repeats < 1:
        parser.error(f"--repeats must be 1 or more, not {args.repeats}")
    with tempfile.TemporaryDirectory(prefix="nj-bench-first-") as name:
        tmp = Path(name)
        hundred = args.x100
        if hundred is None:
            from benchmarks.sim_runs import make_100x

            hundred = make_100x(tmp)
        figures = run(hundred, tmp, args.x1000, args.repeats)
    for line in lines(figures):
        print(line, file=sys.stderr)
    print(orjson.dumps(figures).decode())


if __name__ == "__main__":
    main()
