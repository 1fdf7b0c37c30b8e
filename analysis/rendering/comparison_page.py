"""The HTML page of a comparison (``DIR/index.html``), through the shared page builder."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from analysis.loading.viewer.rounds import JobRounds
from analysis.statistics.comparison import Comparison

from .comparison import comparison_tables, comparison_title, counts_line, notices, test_line
from .html import PageRun, PageSection, render_page
from .html_parts import FigureFile, LinkedTable, run_warnings
from .sequential import saved_line

__all__ = ["comparison_page"]


def comparison_page(
    c: Comparison,
    rounds: Mapping[Path, JobRounds] | None = None,
    figures: Sequence[FigureFile] = (),
) -> str:
    """The page: warnings, the verdicts and ``figures`` (the paired differences), the runs,
    every run's provenance side by side (folded), and the job viewer for the runs ``rounds``
    gives (by run folder; the viewer lists the jobs of the first of them, the others side by
    side, so give runs of one suite)."""
    rounds = rounds or {}
    runs = []
    warnings: list[str] = [*(f"Runs marked {n}" for n in notices(c))]
    for s in c.suites:
        for model, run, f in zip(s.models, s.runs, s.facts, strict=True):
            key = f"{s.suite} · {model}"
            runs.append(PageRun(key, f, run.manifest, rounds.get(run.manifest.folder)))
            warnings += run_warnings(f, (), key)[1 if f.notice else 0 :]
    warnings += [b.message for b in c.banners]
    verdicts, listed = comparison_tables(c)
    shown = sorted({r.key.split(" · ")[0] for r in runs if r.rounds is not None})
    # A sequential comparison opens with where its rule stopped and what that saved.
    text = [saved_line(c.sequential)] if c.sequential is not None else []
    text += [counts_line(c), f"Verdict test: {test_line(c)}."]
    if shown:
        text.append(
            f"The job viewer below shows suite {', '.join(shown)}: pick a job to see every "
            "model's rounds side by side."
        )
    sections = [
        PageSection(
            "Verdicts",
            "verdicts",
            tables=(LinkedTable(verdicts),),
            figures=tuple(figures),
            text=tuple(text),
        ),
        PageSection("Runs", "runs", tables=(LinkedTable(listed),)),
    ]
    return render_page(
        "NumericJev " + comparison_title(c),
        runs,
        sections,
        warnings,
        subtitle=f"comparison folder {c.folder}",
    )
