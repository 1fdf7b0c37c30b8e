"""``numericjev analyze | report | diff``: the analysis half of the command line.

The harness CLI hands these subcommands to ``main`` verbatim, and a finished comparison
to ``summarise_comparison``. Input problems print one line, ``numericjev <command>: error:
<what is wrong and how to fix it>``, on stderr and return 2 without writing anything; so
does any warning banner under ``--strict``. RUN may be ``latest`` (``runfolder.finding``)
or a comparison folder (``analyze`` prints its summary, ``report`` writes it).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from pathlib import Path

import orjson

from runfolder import is_comparison, load_comparison, resolve_run

from .arguments import GATE_FAILED, PROG, SUMMARY_FILES, build_parser
from .errors import AnalysisError, RunFolderError, StrictRefusedError
from .export import export_command
from .loading.cache.column_cache import switched_off
from .loading.comparison import load_comparison_runs
from .loading.probabilities.answers import order_pair
from .loading.run import Run, load_run
from .rendering.comparison import comparison_markdown, comparison_to_dict
from .rendering.diff_tables import diff_markdown, diff_to_dict
from .rendering.json_numbers import analysis_to_dict
from .rendering.report import (
    analysis_markdown,
    prepare_viewer,
    select_path,
    write_report_files,
    write_report_page,
)
from .statistics.banners import Banner
from .statistics.bootstrap import DEFAULT_REPLICATES, DEFAULT_SEED
from .statistics.comparison import Comparison, compare_runs
from .statistics.diff import diff_runs
from .statistics.family_test import DEFAULT_METHOD, as_method
from .statistics.metrics import SCORED
from .statistics.probabilities import ProbabilityStats
from .statistics.summary import analyze_run, probabilities_of

__all__ = ["main"]


def _refuse_if_strict(args: argparse.Namespace, banners: tuple[Banner, ...]) -> None:
    """Under ``--strict``, any banner is a refusal: one line naming every reason."""
    if args.strict and banners:
        reasons = "; ".join(b.message for b in banners)
        raise StrictRefusedError(
            f"refused by --strict: {reasons} — drop --strict to print the tables with warnings"
        )


def _load(path: Path, args: argparse.Namespace, orders: tuple[str, str] | None = None) -> Run:
    """One run folder, its interval answers joined in the same pass unless
    --no-probabilities (``orders``: the option orders to pair, default the run's own)."""
    return load_run(path, probabilities=not args.no_probabilities, orders=orders)


def _load_analysed(path: Path, args: argparse.Namespace) -> tuple[Run, ProbabilityStats | None]:
    """``_load``, the Probabilities section computed from the answers as soon as they are
    read and the answers dropped: a 100× run never holds them beside its outputs."""
    found: list[ProbabilityStats] = []
    run = load_run(
        path,
        probabilities=not args.no_probabilities,
        digest=lambda answers, manifest: found.append(probabilities_of(answers, manifest)),
    )
    return run, found[0] if found else None


def _replicates(args: argparse.Namespace) -> int:
    return DEFAULT_REPLICATES if args.bootstrap is None else int(args.bootstrap)


def _comparison(folder: Path, strict: bool, n_boot: int | None, seed: int) -> Comparison:
    """A comparison folder summarised (refused under ``strict`` when a banner applies)."""
    summary = load_comparison(folder)["options"].get("summary")
    # The predicted distributions' scores need each run's answers read too.
    scored = isinstance(summary, dict) and summary.get("metric") in SCORED
    data = load_comparison_runs(folder, probabilities=scored)
    if n_boot is None:
        n_boot = int(data.summary_option("bootstrap", DEFAULT_REPLICATES))
    metric = str(data.summary_option("metric", "mape"))
    # compare --fail-on-worse [--margin M]: the release gate (kept in compare.json, so a
    # resumed comparison is gated alike).
    gated = bool(data.summary_option("fail_on_worse", False))
    margin = float(data.summary_option("margin", 0.0)) if gated else None
    # compare --test, kept in compare.json (older comparisons: the default).
    method = as_method(data.summary_option("test", DEFAULT_METHOD))
    comparison = compare_runs(data, metric, n_boot, seed, margin=margin, method=method)
    if strict and comparison.banners:
        reasons = "; ".join(b.message for b in comparison.banners)
        raise StrictRefusedError(
            f"refused by --strict: {reasons} — drop --strict to print the summary with warnings"
        )
    return comparison


def _json(numbers: object) -> bytes:
    """``--json`` output and ``summary.json``: indented, ending in a newline."""
    return orjson.dumps(numbers, option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE)


def _print_comparison(comparison: Comparison, as_json: bool) -> None:
    if as_json:
        sys.stdout.buffer.write(_json(comparison_to_dict(comparison)))
    else:
        print(comparison_markdown(comparison), end="")


def _write_comparison(comparison: Comparison, out_dir: Path) -> list[Path]:
    """summary.md, summary.json, index.html (the job viewer: the first suite's runs) and
    the figure of the paired differences it opens with (``paired_differences.svg``/``.png``);
    a sequential comparison's figure of each cell's path over the looks beside it."""
    from .loading.viewer.rounds import load_rounds
    from .rendering.comparison_page import comparison_page
    from .rendering.figures import save_figure
    from .rendering.forest import forest_figure
    from .rendering.html_parts import FigureFile
    from .rendering.sequential import sequential_figure

    out_dir.mkdir(parents=True, exist_ok=True)
    paths = [out_dir / name for name in SUMMARY_FILES]
    paths[0].write_text(comparison_markdown(comparison), encoding="utf-8")
    paths[1].write_bytes(_json(comparison_to_dict(comparison)))
    first = comparison.suites[0].runs if comparison.suites else ()
    rounds = {run.manifest.folder: load_rounds(run.manifest.folder) for run in first}
    figures = []
    forest = forest_figure(comparison)
    if forest is not None:
        svg, png = save_figure(forest, out_dir, "paired_differences")
        paths += [svg, png]
        caption = "Paired differences (model − baseline) with their intervals, by verdict"
        figures.append(FigureFile(caption, svg))
    if comparison.sequential is not None:
        simulated = any(f.simulated for s in comparison.suites for f in s.facts)
        figure = sequential_figure(comparison.sequential, simulated)
        svg, png = save_figure(figure, out_dir, "sequential_path")
        paths += [svg, png]
        figures.append(FigureFile("compare --sequential: each cell's path over the looks", svg))
    paths[2].write_text(comparison_page(comparison, rounds, figures), encoding="utf-8")
    return paths


def summarise_comparison(
    folder: Path, *, command: str = "compare", as_json: bool = False, strict: bool = False
) -> int:
    """Write a comparison's summary files into its folder and print it (``numericjev
    compare`` and ``resume`` call this when the runs are done); the exit status."""
    try:
        comparison = _comparison(folder, strict, None, DEFAULT_SEED)
        paths = _write_comparison(comparison, folder)
        _print_comparison(comparison, as_json)
    except (AnalysisError, RunFolderError) as exc:
        print(f"{PROG} {command}: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    print(f"wrote {', '.join(p.name for p in paths)} in {folder}", file=sys.stderr)
    gate = comparison.gate
    if gate is not None and not gate.passed:
        cells = "; ".join(str(cell) for cell in gate.failed)
        print(
            f"{PROG} {command}: release gate failed: {len(gate.failed)} cell(s) worse than "
            f"{comparison.models[0]} by more than {gate.margin:g}: {cells}",
            file=sys.stderr,
        )
        return GATE_FAILED
    return 0


def _analyze(args: argparse.Namespace) -> int:
    path = resolve_run(args.run)
    if is_comparison(path):
        comparison = _comparison(path, args.strict, args.bootstrap, args.seed)
        _print_comparison(comparison, args.json)
        return 0
    run, probabilities = _load_analysed(path, args)
    analysis = analyze_run(run, _replicates(args), args.seed, probabilities=probabilities)
    _refuse_if_strict(args, analysis.banners)
    if args.json:
        sys.stdout.buffer.write(_json(analysis_to_dict(analysis)))
    else:
        print(analysis_markdown(analysis))
    return 0


def _report(args: argparse.Namespace) -> int:
    folder = resolve_run(args.run)
    if is_comparison(folder):
        out = Path(args.out) if args.out else folder
        if out.exists() and not out.is_dir():
            raise AnalysisError(f"--out {out} is a file; pass a folder path")
        comparison = _comparison(folder, args.strict, args.bootstrap, args.seed)
        files = _write_comparison(comparison, out)
        print(f"wrote {', '.join(p.name for p in files)} in {out}")
        print(f"open it in a browser: {files[2]}")  # index.html (SUMMARY_FILES order)
        return 0
    # The job viewer first: its columns are dropped before the run's are read.
    viewer = prepare_viewer(folder)
    run, probabilities = _load_analysed(folder, args)
    path = select_path(run, args.job, args.decoder)  # before anything is written
    analysis = analyze_run(run, _replicates(args), args.seed, probabilities=probabilities)
    _refuse_if_strict(args, analysis.banners)
    out_dir = Path(args.out) if args.out else folder / "report"
    if out_dir.exists() and not out_dir.is_dir():
        raise AnalysisError(f"--out {out_dir} is a file; pass a folder path")
    written = write_report_files(analysis, path, out_dir)
    for banner in analysis.banners:  # report.md and index.html open with them too
        print(f"{PROG} report: warning: {banner.message}", file=sys.stderr)
    # The page's job data is streamed from the logs again: drop the analysed run first, so
    # that a 100× run holds one of the two in memory, never both.
    del analysis, run
    index = write_report_page(written, out_dir, viewer)
    figures = [f for f in written.files if f.suffix in (".svg", ".png")]
    print(
        f"wrote {written.files[0].name}, {len(figures)} figure files and {index.name} in {out_dir}"
    )
    print(f"open it in a browser: {index}")
    return 0


def _diff(args: argparse.Namespace) -> int:
    html = Path(args.html) if args.html else None
    if html is not None and (html.is_dir() or not html.parent.is_dir()):
        raise AnalysisError(
            f"--html {html} must be a file path in an existing folder, e.g. {Path('diff.html')}"
        )
    run_a = _load(resolve_run(args.a), args)
    run_b = _load(resolve_run(args.b), args, order_pair(run_a.manifest.orders))
    a, b = run_a.answers, run_b.answers  # None under --no-probabilities
    both = (a, b) if a is not None and b is not None else None
    result = diff_runs(
        run_a, run_b, _replicates(args), args.seed, args.top, answers=both, method=args.test
    )
    _refuse_if_strict(args, result.banners)
    if html is not None:
        from .loading.viewer.rounds import load_rounds
        from .rendering.html import diff_page

        manifest_a, manifest_b = run_a.manifest, run_b.manifest
        del run_a, run_b  # the page streams the logs again; keep one copy in memory
        page = diff_page(
            result,
            manifest_a,
            manifest_b,
            load_rounds(manifest_a.folder),
            load_rounds(manifest_b.folder),
        )
        html.write_text(page, encoding="utf-8")
        print(f"wrote {html}", file=sys.stderr)
    if args.json:
        sys.stdout.buffer.write(_json(diff_to_dict(result)))
    else:
        print(diff_markdown(result), end="")
    return 0


def _export(args: argparse.Namespace) -> int:
    return export_command(resolve_run(args.run), args.out, args.format)


_COMMANDS = {"analyze": _analyze, "report": _report, "diff": _diff, "export": _export}


def main(argv: list[str] | None = None) -> int:
    """Run ``analyze``, ``report`` or ``diff`` with ``argv`` (without the program name)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse already printed usage and its error (or help)
        return int(exc.code or 0)
    try:
        with switched_off(getattr(args, "no_cache", False)):
            return _COMMANDS[args.command](args)
    except (AnalysisError, RunFolderError) as exc:  # RunFolderError: see .errors
        message = " ".join(str(exc).split())  # always exactly one line
        print(f"{PROG} {args.command}: error: {message}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # The reader went away (e.g. `| head`): stop quietly, with the same status as the
        # harness commands (the reader had all it wanted; nothing failed).
        with contextlib.suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        print(f"{PROG} {args.command}: interrupted", file=sys.stderr)
        return 130
    except OSError as exc:  # unreadable run files, unwritable --out
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"{PROG} {args.command}: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return 2
