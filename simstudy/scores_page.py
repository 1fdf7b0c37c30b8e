"""The measured part of docs/scores.md, written from a run folder: ``make scores-page``.

Reads one run (the sim's affine run by default: SIMULATED), computes the Distributions
section as ``analyze`` does, and rewrites what lies between the page's two markers: the
run it came from, a ranking of the decoders by CRPS, log score and MAPE per condition, the
section's score and coverage tables, and the report's PIT and coverage figures saved as
PNG beside the page. Whatever decoders the section scores appear, so the page follows the
section when decoders are added to it. Everything else on the page is written by hand.

    python -m simstudy.scores_page RUN [--page docs/scores.md] [--name sim]
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from analysis import AnalysisError, analyze_run, load_run
from analysis.loading.names import condition_label, decoder_label
from analysis.rendering.distribution_figure import coverage_figure, pit_figure
from analysis.rendering.distributions import distribution_tables
from analysis.rendering.markdown import Table, fmt_interval
from analysis.rendering.tables import table_suffix
from analysis.statistics.distributions import DistributionStats
from analysis.statistics.metrics import STATISTICS
from analysis.statistics.probabilities import ProbabilityStats
from analysis.statistics.summary import Analysis, probabilities_of

__all__ = ["begin_marker", "end_marker", "main", "measured_part", "ranking_table", "rewrite"]

PAGE = Path(__file__).resolve().parents[1] / "docs" / "scores.md"


def begin_marker(name: str) -> str:
    """The line after which the generated part of section ``name`` starts."""
    return f"<!-- scores-page:{name}:begin (written by make scores-page; edits here are lost) -->"


def end_marker(name: str) -> str:
    """The line before which the generated part of section ``name`` ends."""
    return f"<!-- scores-page:{name}:end -->"


def _ranks(values: list[float]) -> list[str]:
    """1 for the lowest; "n/a" for NaN; ties share the lower rank."""
    finite = sorted(v for v in values if not math.isnan(v))
    return ["n/a" if math.isnan(v) else str(finite.index(v) + 1) for v in values]


def ranking_table(a: Analysis, d: DistributionStats) -> Table:
    """Per condition, every scored decoder by CRPS, density log score and MAPE, with ranks
    (1: lowest, best) and 95% family-bootstrap intervals."""
    suite = a.facts.suite
    s = STATISTICS.index("mape")
    rows = []
    for condition in dict.fromkeys(r.condition for r in d.rows):
        scored = [r for r in d.rows if r.condition == condition and r.scored]
        c = a.design.conditions.index(condition)
        mape = []
        for r in scored:
            i = a.design.decoders.index(r.decoder)
            b = a.bootstrap
            mape.append(
                (float(a.metrics.point[s, i, c]), float(b.lo[s, i, c]), float(b.hi[s, i, c]))
            )
        ranks = {
            "crps": _ranks([r.mean["crps"] for r in scored]),
            "log": _ranks([r.mean["log_density"] for r in scored]),
            "mape": _ranks([m[0] for m in mape]),
        }
        for j, r in enumerate(scored):
            lo, hi = r.interval["crps"]
            llo, lhi = r.interval["log_density"]
            rows.append(
                (
                    condition_label(condition),
                    decoder_label(r.decoder, suite),
                    f"{fmt_interval(r.mean['crps'], lo, hi)} ({ranks['crps'][j]})",
                    f"{fmt_interval(r.mean['log_density'], llo, lhi)} ({ranks['log'][j]})",
                    f"{fmt_interval(*mape[j])} ({ranks['mape'][j]})",
                )
            )
    header = ("Condition", "Decoder", "CRPS (% of U−L)", "Log score (density)", "MAPE (%)")
    notes = (
        "(n): the decoder's rank in its condition, 1 the lowest (best); [ ] 95% "
        "family-bootstrap intervals. CRPS and log score over the outputs with a whole "
        "distribution, MAPE over the ok outputs (the paper's).",
    )
    return Table(f"Ranking by score{table_suffix(a)}", header, tuple(rows), notes, left=2)


def _orders(a: Analysis, d: DistributionStats) -> list[str]:
    """One line per condition: the decoders best to worst by each score, and whether MAPE's
    order is CRPS's and the log score's."""
    suite, s = a.facts.suite, STATISTICS.index("mape")
    lines = []
    for condition in dict.fromkeys(r.condition for r in d.rows):
        scored = [r for r in d.rows if r.condition == condition and r.scored]
        c = a.design.conditions.index(condition)
        mape = {
            r.decoder: a.metrics.point[s, a.design.decoders.index(r.decoder), c] for r in scored
        }
        by = {
            "CRPS": sorted(scored, key=lambda r: r.mean["crps"]),
            "log score": sorted(scored, key=lambda r: r.mean["log_density"]),
            "MAPE": sorted(scored, key=lambda r: mape[r.decoder]),
        }
        names = {k: [decoder_label(r.decoder, suite) for r in v] for k, v in by.items()}
        same = [k for k in ("CRPS", "log score") if names[k] == names["MAPE"]]
        # The log score's mean leaves out outputs whose true leaf had no mass: say how many.
        apart = ", ".join(
            f"{decoder_label(r.decoder, suite)} {r.zero_mass:,} of {r.scored:,}"
            for r in scored
            if r.zero_mass
        )
        kept = f"is that by {' and '.join(same)}" if same else "is neither"
        lines.append(
            f"- {condition_label(condition)}: by CRPS {' < '.join(names['CRPS'])}; by log "
            f"score {' < '.join(names['log score'])}"
            + (f" (leaving out true leaf mass 0: {apart})" if apart else "")
            + f"; by MAPE {' < '.join(names['MAPE'])} (MAPE's order {kept})."
        )
    return lines


def measured_part(a: Analysis, p: ProbabilityStats, out_dir: Path, name: str) -> list[str]:
    """The generated lines of section ``name``; its two figures written into ``out_dir``."""
    from analysis.rendering.figures import save_figure

    d = p.distributions
    if d is None or not any(r.scored for r in d.rows):
        return [f"Run `{a.facts.run_id}` has no output with a whole distribution: n/a.", ""]
    f = a.facts
    stems = {"pit": f"scores_pit_{name}", "coverage": f"scores_coverage_{name}"}
    for stem, draw in (("pit", pit_figure), ("coverage", coverage_figure)):
        svg, _ = save_figure(draw(d, f.model, f.suite, f.notice), out_dir, stems[stem])
        svg.unlink()  # the page shows the PNG
    mark = f" — {f.notice}" if f.notice else ""
    lines = [
        f"Run `{f.run_id}`: model `{f.model}`, suite `{f.suite}`, "
        f"{f.jobs_done:,} jobs done{mark}. Decoders scored: "
        + ", ".join(
            decoder_label(dec, f.suite)
            for dec in dict.fromkeys(r.decoder for r in d.rows if r.scored)
        )
        + ".",
        "",
        "Decoders best to worst (lowest mean first; intervals in the table below):",
        "",
        *_orders(a, d),
        "",
        ranking_table(a, d).to_markdown(),
        "",
    ]
    for table in distribution_tables(p, f.suite, table_suffix(a))[:2]:
        lines += [table.to_markdown(), ""]
    caption = f"PIT histograms of the {name} run{mark}"
    lines += [f"![{caption}]({stems['pit']}.png)", ""]
    caption = f"Coverage against nominal, {name} run{mark}"
    lines += [f"![{caption}]({stems['coverage']}.png)", ""]
    return lines


def rewrite(page: str, name: str, lines: list[str]) -> str:
    """``page`` with what lies between section ``name``'s markers replaced by ``lines``."""
    begin, end = begin_marker(name), end_marker(name)
    if page.count(begin) != 1 or page.count(end) != 1 or page.index(begin) > page.index(end):
        raise ValueError(f"the page needs one {begin!r} line and, after it, one {end!r} line")
    head, rest = page.split(begin, 1)
    _, tail = rest.split(end, 1)
    return head + begin + "\n\n" + "\n".join(lines) + "\n" + end + tail


def main(argv: list[str] | None = None) -> int:
    """Analyse RUN and rewrite the page's generated part; 2 with one line on bad input."""
    parser = argparse.ArgumentParser(prog="python -m simstudy.scores_page", description=__doc__)
    parser.add_argument("run", type=Path, help="the run folder to measure")
    parser.add_argument("--page", type=Path, default=PAGE, help=f"the page (default {PAGE})")
    parser.add_argument("--name", default="sim", help="which marked section (default sim)")
    args = parser.parse_args(argv)
    found: list[ProbabilityStats] = []
    try:
        page = args.page.read_text(encoding="utf-8")
        rewrite(page, args.name, [])  # no markers: refused before any work or file is written
        run = load_run(
            args.run, probabilities=True, digest=lambda s, m: found.append(probabilities_of(s, m))
        )
        a = analyze_run(run, probabilities=found[0] if found else None)
        if a.probabilities is None:
            raise ValueError(f"{args.run} has no interval answers to score")
        text = rewrite(
            page, args.name, measured_part(a, a.probabilities, args.page.parent, args.name)
        )
    except (AnalysisError, OSError, ValueError) as exc:
        print(f"scores-page: {exc}", file=sys.stderr)
        return 2
    args.page.write_text(text, encoding="utf-8")
    print(f"wrote the {args.name} part of {args.page}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
