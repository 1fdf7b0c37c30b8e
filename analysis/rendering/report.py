"""The Markdown document of ``analyze`` and the report folder of ``report``."""

from __future__ import annotations

import gc
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from analysis.errors import SelectionError
from analysis.loading.columns.row_chunks import release_freed
from analysis.loading.logs.exchanges import job_answers
from analysis.loading.logs.outputs import find_output
from analysis.loading.names import tree_branching
from analysis.loading.run import Run
from analysis.loading.viewer.paths import DecisionPath, decision_path
from analysis.statistics.design import REFERENCE_DOMAIN
from analysis.statistics.summary import Analysis
from runfolder import load_manifest

from .markdown import MAIN_FIGURE, warning_lines

if TYPE_CHECKING:  # the page builder (Jinja2) is imported on use: `analyze` never needs it
    from .html import PackedRounds, RunSummary
    from .html_parts import FigureFile

from .distributions import distribution_section
from .probabilities import probability_section
from .tables import build_tables, facts_table, table_suffix

__all__ = [
    "WrittenReport",
    "analysis_markdown",
    "prepare_viewer",
    "select_path",
    "write_report",
    "write_report_files",
    "write_report_page",
]


def _header(a: Analysis) -> list[str]:
    f = a.facts
    lines = [f"# NumericJev analysis — run {f.run_id} · suite {f.suite} · model {f.model}", ""]
    if f.notice:
        lines += [f"> **{f.notice}**", ""]
    return lines + warning_lines(b.message for b in a.banners)


def analysis_markdown(a: Analysis, figures: list[tuple[str, str]] | None = None) -> str:
    """The full Markdown of one analysed run, answer first: the main table and its figure,
    the other figures and tables, then the facts and hashes (provenance) at the end."""
    parts = _header(a)
    tables = build_tables(a)
    figures = figures or []
    main = [fig for fig in figures if fig[1].startswith(f"{MAIN_FIGURE}.")][:1] or figures[:1]
    for table in tables[:1]:
        parts += [table.to_markdown(), ""]
    for caption, file in main + [fig for fig in figures if fig not in main]:
        parts += [f"![{caption}]({file})", "", f"*{caption}*", ""]
    for table in tables[1:]:
        parts += [table.to_markdown(), ""]
    # After the paper's own tables, which it never changes (a test checks).
    parts += probability_section(a.probabilities, a.facts.suite, table_suffix(a))
    parts += distribution_section(a.probabilities, a.facts.suite, table_suffix(a))
    parts += [facts_table(a).to_markdown(), ""]
    if a.run.hashes is not None:
        parts += [a.run.hashes.line(), ""]
    return "\n".join(parts)


def _first_job(run: Run, decoder: str) -> str:
    out = run.outputs
    rows = np.flatnonzero(out.ok & (out.decoder == out.decoder_names.index(decoder)))
    if REFERENCE_DOMAIN in out.domain_names:
        # Paper Figure 2 shows a non-integer target, where the path's decimals matter.
        transformed = rows[out.domain[rows] != out.domain_names.index(REFERENCE_DOMAIN)]
        rows = transformed if len(transformed) else rows
    if not len(rows):
        raise SelectionError(f"run has no ok {decoder} output to draw; pass --job JOB_ID")
    return out.job[int(rows[0])]


def _default_tree(trees: list[str]) -> str | None:
    """tree10 (paper Figure 2) when the run has it, else its widest tree, else None."""
    if "tree10" in trees:
        return "tree10"
    return max(trees, key=lambda name: tree_branching(name) or 0, default=None)


def select_path(run: Run, job: str | None, decoder: str | None = None) -> DecisionPath | None:
    """The decision path to draw: ``job`` (default: first ok non-int-domain job) for ``decoder``.

    Without ``decoder``, tree10 is drawn when the run has it, otherwise its widest tree
    (the exploratory suite has only tree4, the binary historical follow-up only tree2), and
    nothing (None) when the run has no tree at all and no ``job`` was asked for.
    """
    trees = [d for d in run.outputs.decoder_names if tree_branching(d) is not None]
    if decoder is None:
        if not trees and job is None:
            return None
        decoder = _default_tree(trees) or "tree10"  # no tree at all: the error below says so
    if tree_branching(decoder) is None or decoder not in run.outputs.decoder_names:
        raise SelectionError(
            f"--decoder {decoder} is not a tree decoder with outputs in this run; "
            f"choose one of: {', '.join(trees) or 'none (the run has no treeK decoder)'}"
        )
    job = job if job is not None else _first_job(run, decoder)
    record: dict[str, Any] | None = find_output(run.manifest.folder / "outputs.jsonl", job, decoder)
    if record is None:
        raise SelectionError(
            f"job {job!r} has no {decoder} output in {run.manifest.folder}; pass a job id from "
            f"outputs.jsonl, e.g. {_first_job(run, decoder)}"
        )
    answers = job_answers(run.manifest.folder / "requests.jsonl", job, decoder)
    return decision_path(record, answers=answers)


@dataclass(frozen=True, eq=False)
class WrittenReport:
    """report.md and the figures, written; and what the HTML page still needs of the run."""

    files: tuple[Path, ...]
    figures: tuple[FigureFile, ...]
    summary: RunSummary


def write_report_files(a: Analysis, path: DecisionPath | None, out_dir: Path) -> WrittenReport:
    """Write report.md and every figure of :func:`report_figures` (SVG and PNG)."""
    # Imported here so that `analyze` does not pay matplotlib's import time.
    from .figure_list import report_figures
    from .figures import save_figure
    from .html import run_summary
    from .html_parts import FigureFile

    out_dir.mkdir(parents=True, exist_ok=True)
    figures = report_figures(a, path)
    written: list[Path] = []
    for stem, _, fig in figures:
        written += save_figure(fig, out_dir, stem)
    markdown = analysis_markdown(a, [(caption, f"{stem}.svg") for stem, caption, _ in figures])
    report = out_dir / "report.md"
    report.write_text(markdown.replace("# NumericJev analysis", "# NumericJev report", 1) + "\n")
    return WrittenReport(
        (report, *written),
        tuple(FigureFile(caption, out_dir / f"{stem}.svg") for stem, caption, _ in figures),
        run_summary(a),
    )


def _release_freed_memory() -> None:
    """Hand the heap the dropped run leaves behind back to the system (``malloc_trim``):
    glibc keeps freed pages mapped, and at 100× the viewer's columns would otherwise come
    on top of the analysis' ~200 MB, not in its place."""
    gc.collect()
    release_freed()


def prepare_viewer(run_dir: Path) -> PackedRounds:
    """The job viewer of ``run_dir`` packed for :func:`write_report_page`: called before
    the run is loaded, its columns are gone before the analysis makes its own."""
    from analysis.loading.viewer.rounds import load_rounds

    from .html import pack_viewer

    suite = load_manifest(
        run_dir, partial=True
    ).suite  # not a run folder: refused before any reading
    rounds = load_rounds(run_dir)
    packed = pack_viewer(rounds, suite)
    del rounds
    # The columns' pages back to the system before the run is read, not kept mapped under it.
    _release_freed_memory()
    return packed


def write_report_page(
    report: WrittenReport, out_dir: Path, viewer: PackedRounds | None = None
) -> Path:
    """Write the self-contained ``index.html`` (every figure inline, the job viewer, packed
    here unless ``viewer`` was, by :func:`prepare_viewer`).

    Needs no :class:`Analysis`: a caller that drops its run before this call keeps the
    peak memory of a 100× run to that of the analysis or of the viewer data, not both.
    """
    from analysis.loading.viewer.rounds import load_rounds

    from .html import run_page

    if viewer is None:
        _release_freed_memory()
    rounds = viewer or load_rounds(report.summary.manifest.folder)
    index, partial = out_dir / "index.html", out_dir / ".index.html.partial"
    try:  # written as it is made, then renamed: never half a page under the real name
        with partial.open("w", encoding="utf-8") as out:
            out.writelines(run_page(report.summary, report.figures, rounds))
        partial.replace(index)
    finally:
        partial.unlink(missing_ok=True)
    return index


def write_report(
    a: Analysis, path: DecisionPath | None, out_dir: Path, html: bool = True
) -> list[Path]:
    """Write report.md, the figures and, with ``html``, index.html into ``out_dir``."""
    report = write_report_files(a, path, out_dir)
    files = list(report.files)
    if html:
        files.append(write_report_page(report, out_dir))
    return files
