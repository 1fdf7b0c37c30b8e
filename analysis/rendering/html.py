"""Self-contained HTML pages: one run (``report``), two runs (``diff --html``) and, through
the same :func:`render_page`, any comparison of N runs (issue 9's ``compare``).

A page is one file: styles, a little plain JavaScript and the figures (SVG) are inline and
nothing is fetched, so it opens offline years later. Jinja2 autoescapes every value, and
the JSON block is written with ``<``, ``>`` and ``&`` as ``\\u003c``-style escapes, so a
label or an expression from a log is always shown as text, never run as markup.

Page builders::

    render_page(title, runs, sections, warnings) -> str         # N runs, any sections
    page_parts(title, runs, sections, warnings) -> Iterator[str] # the same, piece by piece
    run_page(run_summary(analysis), figures, rounds) -> Iterator[str]  # numericjev report
    diff_page(diff, run_a, run_b, rounds_a, rounds_b) -> str     # numericjev diff --html

``compare`` (issue 9) calls :func:`render_page` with one :class:`PageRun` per model × suite
cell (each with its ``JobRounds`` for the side-by-side viewer, or None to leave a run out
of it) and its verdict tables as :class:`PageSection` s; runs of the same suite share job
ids, so the viewer shows one column per run for a chosen job.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import cache

import orjson
from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup

from analysis.loading.names import condition_label, decoder_label, domain_label
from analysis.loading.viewer.rounds import JobRounds
from analysis.statistics.diff import RunDiff
from analysis.statistics.facts import RunFacts
from analysis.statistics.summary import Analysis
from runfolder import Manifest

from .diff_tables import diff_tables, diff_title
from .html_data import pack_rounds
from .html_parts import (
    FigureFile,
    JobLink,
    LinkedTable,
    inline_svg,
    provenance_rows,
    run_warnings,
    worst_cases,
)
from .markdown import MAIN_FIGURE, Table
from .tables import build_tables, title_suffix

__all__ = [
    "PackedRounds",
    "PageRun",
    "PageSection",
    "RunSummary",
    "diff_page",
    "pack_viewer",
    "page_parts",
    "render_page",
    "run_page",
    "run_summary",
]


@dataclass(frozen=True, eq=False)
class PackedRounds:
    """A run's job viewer packed ahead of its page (``pack_viewer``): the block, the names
    the page labels and the worst cases, without the columns (151 MB at 100×), so that
    ``report`` never holds them beside the analysed run."""

    block: str
    decoders: list[str]
    domains: list[str]
    conditions: list[str]
    worst: tuple[tuple[str, LinkedTable], ...]


def pack_viewer(rounds: JobRounds, suite: str) -> PackedRounds:
    """What the page of one run needs of its job-viewer columns, packed now."""
    worst = tuple(worst_cases(rounds, suite))
    return PackedRounds(
        pack_rounds(rounds), rounds.decoders, rounds.domains, rounds.conditions, worst
    )


def _block(rounds: JobRounds | PackedRounds) -> str:
    return rounds.block if isinstance(rounds, PackedRounds) else pack_rounds(rounds)


@dataclass(frozen=True, eq=False)
class PageRun:
    """One run shown on a page.

    ``key`` names it on the page ("A", "B", "sim:seed=7 · affine"); ``rounds`` feeds the job
    viewer (None: the run is not in the viewer).
    """

    key: str
    facts: RunFacts
    manifest: Manifest
    rounds: JobRounds | PackedRounds | None = None


@dataclass(frozen=True)
class PageSection:
    """A titled part of a page: prose, tables (sortable, rows may link to jobs), figures."""

    title: str
    anchor: str
    tables: tuple[LinkedTable, ...] = ()
    figures: tuple[FigureFile, ...] = ()
    text: tuple[str, ...] = ()
    groups: tuple[tuple[str, tuple[LinkedTable, ...]], ...] = field(default=())


# Verdict cells are coloured by these classes (style.css), and keep their words.
VERDICT_CLASSES = {
    "worse": "worse",
    "better": "better",
    "no clear difference": "none",
    "no verdict": "none",
}


@cache
def _environment() -> Environment:
    # select_autoescape: every .html/.j2 template escapes its values; viewer.js and
    # style.css are included verbatim (they hold no template values).
    return Environment(
        loader=PackageLoader("analysis.rendering", "templates"),
        autoescape=select_autoescape(enabled_extensions=("html", "j2"), default=False),
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )


def _json_block(value: object) -> Markup:
    """JSON safe inside a <script> element: no ``</script>``, no ``<!--``, no ``&`` entities."""
    text = orjson.dumps(value).decode()
    for char, escape in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026")):
        text = text.replace(char, escape)
    return Markup(text)


def _labels(runs: Sequence[PageRun]) -> dict[str, dict[str, str]]:
    """Display labels of the names that appear in the viewer's data."""
    suite = runs[0].facts.suite if runs else None
    found: dict[str, dict[str, str]] = {"decoder": {}, "domain": {}, "condition": {}}
    for run in runs:
        if run.rounds is None:
            continue
        for name in run.rounds.decoders:
            found["decoder"][name] = decoder_label(name, suite)
        for name in run.rounds.domains:
            found["domain"][name] = domain_label(name)
        for name in run.rounds.conditions:
            found["condition"][name] = condition_label(name)
    return found


def render_page(
    title: str,
    runs: Sequence[PageRun],
    sections: Sequence[PageSection],
    warnings: Sequence[str] = (),
    subtitle: str = "",
) -> str:
    """The whole HTML page: warnings, provenance of ``runs``, ``sections``, the job viewer.

    With several runs the provenance table has one column per run and highlights every
    row where they differ, and the viewer shows the chosen job of each run side by side.
    """
    return "".join(page_parts(title, runs, sections, warnings, subtitle))


def page_parts(
    title: str,
    runs: Sequence[PageRun],
    sections: Sequence[PageSection],
    warnings: Sequence[str] = (),
    subtitle: str = "",
) -> Iterator[str]:
    """:func:`render_page`'s text piece by piece, to be written as it is made: a 100× run's
    page (15 MB, nearly all of it the viewer's block) is then never held whole, nor beside
    its encoded bytes."""
    viewer = [run for run in runs if run.rounds is not None]
    meta = {
        "runs": [
            {
                "key": run.key,
                "run_id": run.facts.run_id,
                "model": run.facts.model,
                "suite": run.facts.suite,
                "simulated": run.facts.simulated,
                "oracle": run.facts.oracle,
            }
            for run in viewer
        ],
        "labels": _labels(viewer),
    }
    template = _environment().get_template("page.html.j2")
    return template.generate(
        title=title,
        subtitle=subtitle,
        warnings=list(warnings),
        runs=list(runs),
        provenance=provenance_rows([(run.facts, run.manifest) for run in runs]),
        sections=list(sections),
        meta=_json_block(meta),
        blocks=[(run.key, _block(run.rounds)) for run in viewer if run.rounds is not None],
        svg=inline_svg,
        verdicts=VERDICT_CLASSES,
        simulated=any(run.facts.simulated for run in runs),
        oracle=any(run.facts.oracle for run in runs),
    )


@dataclass(frozen=True, eq=False)
class RunSummary:
    """What the page of one run needs from its :class:`Analysis`, without the arrays."""

    facts: RunFacts
    manifest: Manifest
    tables: tuple[Table, ...]
    warnings: tuple[str, ...]


def run_summary(a: Analysis) -> RunSummary:
    """The tables, facts and warnings of ``a`` (small: the run's arrays are not kept)."""
    return RunSummary(
        a.facts,
        a.run.manifest,
        tuple(build_tables(a)),
        tuple(run_warnings(a.facts, a.banners)),
    )


def run_page(
    s: RunSummary, figures: Sequence[FigureFile], rounds: JobRounds | PackedRounds | None
) -> Iterator[str]:
    """The page of one analysed run (``numericjev report``), piece by piece (``page_parts``):
    the main table and its figure first, then the other tables and figures, the worst
    cases, provenance and the jobs."""
    f = s.facts
    main = [fig for fig in figures if fig.svg.stem == MAIN_FIGURE][:1] or list(figures[:1])
    sections = [
        PageSection("Main result", "main", tables=tuple(LinkedTable(t) for t in s.tables[:1]),
                    figures=tuple(main)),
        PageSection("Tables", "tables", tables=tuple(LinkedTable(t) for t in s.tables[1:])),
        PageSection("Figures", "figures", figures=tuple(f for f in figures if f not in main)),
    ]  # fmt: skip
    if rounds is not None:
        worst = rounds.worst if isinstance(rounds, PackedRounds) else worst_cases(rounds, f.suite)
        groups = tuple((label, (table,)) for label, table in worst)
        single = (
            "Single outputs, the largest APEs per decoder: no interval, nothing is averaged.",
        )
        sections.append(PageSection("Worst cases", "worst", text=single, groups=groups))
    return page_parts(
        f"NumericJev report — run {f.run_id}",
        [PageRun(f.run_id, f, s.manifest, rounds)],
        sections,
        s.warnings,
        subtitle=title_suffix(f.model, f.suite, f.notice).removeprefix(" — "),
    )


def diff_page(
    d: RunDiff,
    manifest_a: Manifest,
    manifest_b: Manifest,
    rounds_a: JobRounds | None,
    rounds_b: JobRounds | None,
) -> str:
    """The page of ``numericjev diff A B --html``: both provenances, paired deltas, the
    outputs that changed most (each opening A's and B's rounds side by side)."""
    tables = diff_tables(d)
    changes, rest = tables[0], tables[1:]
    linked = [LinkedTable(changes)]
    for table in rest:
        if table.title.startswith("Largest changes"):
            links = tuple(JobLink(o.job, o.decoder) for o in d.top)
            linked.append(LinkedTable(table, links))
        elif not table.title.startswith("Runs compared"):  # the provenance table shows it
            linked.append(LinkedTable(table))
    # diff's banners name the side they concern (and A = B, and sides that differ).
    warnings = [
        *run_warnings(d.facts_a, (), "A"),
        *run_warnings(d.facts_b, (), "B"),
        *(banner.message for banner in d.banners),
    ]
    runs = [
        PageRun("A", d.facts_a, manifest_a, rounds_a),
        PageRun("B", d.facts_b, manifest_b, rounds_b),
    ]
    return render_page(
        "NumericJev diff — " + diff_title(d).removeprefix("Diff "),
        runs,
        [PageSection("Paired differences", "tables", tables=tuple(linked))],
        warnings,
        subtitle=f"suite {d.facts_a.suite}",
    )
