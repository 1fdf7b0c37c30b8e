"""The Distributions section scores a run a chunk of leaves at a time: the numbers do not
depend on the chunk size, and the per-output scores average to the section's means."""

from __future__ import annotations

import numpy as np
import pytest

from analysis.loading.answers import load_answers
from analysis.statistics import distributions
from analysis.statistics.distributions import SCORES, distribution_stats, unit_scores
from tests.runhelpers import SMALL, cli


@pytest.fixture(scope="module")
def answers(tmp_path_factory: pytest.TempPathFactory):
    folder = tmp_path_factory.mktemp("chunks") / "run"
    assert cli("run", *SMALL, "--run", str(folder), "--no-progress") == 0
    return load_answers(folder)


def _stats(log, chunk: int, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(distributions, "CHUNK", chunk)
    names = log.names
    return distribution_stats(log, tuple(names["decoder"]), tuple(names["condition"]), n_boot=200)


def test_the_numbers_do_not_depend_on_the_chunk_size(answers, monkeypatch) -> None:
    whole = _stats(answers, 1 << 30, monkeypatch)  # one chunk
    small = _stats(answers, 40, monkeypatch)  # a few paths per chunk: hundreds of chunks
    assert whole.n_families == small.n_families and len(whole.steps) == len(small.steps)
    for a, b in zip(whole.steps, small.steps, strict=True):
        assert a.rps == pytest.approx(b.rps, rel=1e-12)
        assert (a.decoder, a.depth, a.questions, a.log_loss) == (
            b.decoder,
            b.depth,
            b.questions,
            b.log_loss,
        )
    assert [r.scored for r in whole.rows] == [r.scored for r in small.rows] and whole.rows
    for a, b in zip(whole.rows, small.rows, strict=True):
        assert (a.decoder, a.condition, a.pit_counts, a.zero_mass) == (
            b.decoder,
            b.condition,
            b.pit_counts,
            b.zero_mass,
        )
        for name in SCORES:
            assert a.mean[name] == pytest.approx(b.mean[name], rel=1e-12, abs=1e-12)
            assert a.interval[name] == pytest.approx(b.interval[name], rel=1e-12, abs=1e-12)


def test_per_output_scores_average_to_the_sections_means(answers, monkeypatch) -> None:
    monkeypatch.setattr(distributions, "CHUNK", 40)
    stats = _stats(answers, 40, monkeypatch)
    units, scores = unit_scores(answers, np.ones(len(answers), bool))
    u, names = answers.units, answers.names
    for row in stats.rows:
        mine = (u["decoder"][units] == names["decoder"].index(row.decoder)) & (
            u["condition"][units] == names["condition"].index(row.condition)
        )
        assert mine.sum() == row.scored
        for name in SCORES:
            values = scores[name][mine]
            assert np.nanmean(values) == pytest.approx(row.mean[name], rel=1e-12)
