"""The Probabilities section on real runs of the sim: the first-divergence bound holds on
every group of every suite (the default sim and a much noisier one), its mean error is the
main table's NMAE, and the paper's tables are the same with and without the section."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from analysis import STATISTICS, analysis_markdown, analyze_run, load_run
from analysis.loading.probabilities.answers import load_answers, order_pair
from tests.runhelpers import SMALL, cli

NOISY = ["--model", "sim:confusion=0.6,blunder=0.4,negative=0.5,provided=0.8"]
RUNS = {
    "affine": ["--suite", "affine", *SMALL],
    "affine-noisy": ["--suite", "affine", *SMALL, *NOISY],
    "exploratory": ["--suite", "exploratory", *NOISY],
    "historical": ["--suite", "historical"],
    # Probability-aware decoders: a mean read-out on tree paths, beams, bisection.
    "affine-probability-decoders": [
        "--suite",
        "affine",
        *SMALL,
        "--decoders",
        "tree10,tree10_mean,tree4_beam2,bisect4",
    ],
}


@pytest.fixture(scope="module", params=sorted(RUNS))
def sim_run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("runs") / request.param
    assert cli("run", "--run", str(folder), "--no-progress", *RUNS[request.param]) == 0
    return folder


def test_the_bound_holds_on_every_group(sim_run: Path) -> None:
    run = load_run(sim_run)
    answers = load_answers(sim_run, order_pair(run.manifest.orders))
    analysis = analyze_run(run, 0, answers=answers)
    p = analysis.probabilities
    assert p is not None and p.available and p.divergence
    nmae = STATISTICS.index("nmae")
    for group in p.divergence:
        if group.not_covered is not None:  # a mean read-out: the proof does not apply
            assert group.decoder.endswith("_mean") and group.holds is None
            continue
        assert group.holds is True, (group.decoder, group.condition)
        assert group.beyond_term == 0
        # The bound's mean error is the main table's NMAE: same outputs, same exact errors.
        d = analysis.design.decoders.index(group.decoder)
        c = analysis.design.conditions.index(group.condition)
        assert group.percent(group.mean_error) == pytest.approx(
            analysis.metrics.point[nmae, d, c], abs=1e-9
        )
        assert sum(r.pr for r in group.depths) <= 1 + 1e-12


def test_the_paper_tables_are_unchanged(sim_run: Path) -> None:
    run = load_run(sim_run)
    plain = analysis_markdown(analyze_run(run, 100))
    full = analysis_markdown(analyze_run(run, 100, answers=load_answers(sim_run)))
    start, end = full.index("## Probabilities"), full.index("### Run facts")
    assert full[:start] + full[end:] == plain


def test_calibration_covers_every_answerable_interval_question(sim_run: Path) -> None:
    answers = load_answers(sim_run)
    assert answers.counts.choice_mismatch == 0 and answers.counts.duplicates == 0
    assert answers.counts.with_probabilities == answers.counts.answered  # the sim always sends them
    answerable = answers.q_holds >= 0
    assert np.all((answers.q_selected > 0) & (answers.q_selected <= 1 + 1e-12))
    assert np.all(answers.q_true[answerable] >= 0)


def test_probability_aware_decoders_are_read_as_far_as_their_traces_allow(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    folder = tmp_path_factory.mktemp("runs") / "decoders"
    assert (
        cli("run", "--run", str(folder), "--no-progress", *RUNS["affine-probability-decoders"]) == 0
    )
    run = load_run(folder)
    p = analyze_run(run, 0, answers=load_answers(folder)).probabilities
    assert p is not None
    assert {d for d, _ in p.not_intervals} == {"tree4_beam2"}  # several intervals per round
    assert {g.decoder for g in p.divergence} == {"tree10", "tree10_mean"}
    assert ("bisect4", "path not nested", 128) in p.left_out  # it re-cuts the whole grid
    assert {r.decoder for r in p.calibration} == {"tree10", "tree10_mean", "bisect4"}
    mean = {g.condition: g for g in p.divergence if g.decoder == "tree10_mean"}
    greedy = {g.condition: g for g in p.divergence if g.decoder == "tree10"}
    # Same questions, same path: the same first divergences, whatever the read-out.
    for condition, g in mean.items():
        assert [r.diverged for r in g.depths] == [r.diverged for r in greedy[condition].depths]
