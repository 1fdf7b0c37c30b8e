"""The predicted distributions' scores wherever the metrics go: compare --metric crps and
logscore (verdicts through compare's one test), diff (paired over outputs scored in both),
the Parquet export (per output, null where n/a)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import orjson
import pyarrow.parquet as pq
import pytest
from test_chain_distributions import digits_run

from analysis.export import export_run
from analysis.loading.comparison import load_comparison_runs
from analysis.loading.probabilities.answers import load_answers
from analysis.loading.run import load_run
from analysis.statistics.comparison import compare_runs
from analysis.statistics.output_scores import scored_outputs
from tests.runhelpers import cli


@pytest.fixture(scope="module")
def worse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """sim against sim with every arithmetic result ten cells off, scored by CRPS."""
    folder = tmp_path_factory.mktemp("crps") / "cmp"
    args = ["compare", "--models", "sim,sim:slip_ten=1", "--suites", "affine", "--metric",
            "crps", "--param", "per_operator=4", "--out", str(folder), "--no-progress",
            "--bootstrap", "400", "--test", "t"]  # fmt: skip
    assert cli(*args) == 0
    return folder


def test_compare_metric_crps_gives_verdicts_for_every_decoder_with_probabilities(worse: Path):
    rows = orjson.loads((worse / "summary.json").read_bytes())["rows"]
    verdicts = {(r["decoder"], r["condition"]): r["verdict"] for r in rows}
    assert {d for d, _ in verdicts} == {"direct", "tree2", "tree4", "tree10", "digits", "bits"}
    assert all(v is not None for v in verdicts.values())
    # Ten cells off is worse by CRPS wherever y was asked for; the provided control is not.
    assert sum(v == "worse" for (_, c), v in verdicts.items() if c == "arithmetic") >= 4
    assert all(v != "worse" for (_, c), v in verdicts.items() if c == "provided")


def test_compare_crps_is_the_distributions_sections_crps(worse: Path):
    c = compare_runs(load_comparison_runs(worse, probabilities=True), "crps", n_boot=0)
    s = c.suites[0]
    log = load_answers(s.runs[0].manifest.folder)
    found = scored_outputs(log)
    names = log.names["decoder"], log.names["condition"]
    for d, decoder in enumerate(s.design.decoders):
        for k, condition in enumerate(s.design.conditions):
            mine = (np.array(names[0])[found.decoder] == decoder) & (
                np.array(names[1])[found.condition] == condition
            )
            assert np.isclose(s.point[0, d, k], found.scores["crps"][mine].mean())


def test_without_the_answers_compare_crps_has_no_units(worse: Path):
    c = compare_runs(load_comparison_runs(worse), "crps", n_boot=0)
    assert np.all(np.isnan(c.suites[0].point)) and not c.suites[0].n_common.any()


def test_diff_shows_the_scores_over_outputs_scored_in_both(worse: Path, capsys):
    a, b = sorted(p for p in worse.iterdir() if p.is_dir())
    assert cli("diff", str(a), str(b), "--json", "--bootstrap", "200") in (0, 2)
    cells = orjson.loads(capsys.readouterr().out)["cells"]
    crps = {(c["decoder"], c["condition"]): c["crps"] for c in cells}
    assert all(v["n"] == 128 for v in crps.values())  # every output scored in both runs
    assert all(v["lo"] is not None for (_, c), v in crps.items() if c == "arithmetic")
    direct = crps[("direct", "arithmetic")]
    assert np.isclose(direct["delta"], direct["b"] - direct["a"])
    assert cli("diff", str(a), str(b), "--bootstrap", "0") in (0, 2)
    assert "Predicted distributions' scores, paired (B − A)" in capsys.readouterr().out


def test_the_export_has_each_outputs_scores_and_null_where_na(tmp_path: Path):
    folder = digits_run(tmp_path, None)  # digits: its second answer has no probabilities
    export_run(folder, tmp_path / "out")
    table = pq.read_table(tmp_path / "out" / "outputs.parquet").to_pylist()
    by = {row["decoder"]: row for row in table}
    names = ("crps", "crps_log10", "logscore", "logscore_leaf", "pit", "covered_50", "covered_80",
             "covered_90", "interval_score_50", "interval_score_80", "interval_score_90")  # fmt: skip
    assert all(by["digits"][n] is None for n in names)
    assert all(isinstance(by["bits"][n], float) for n in names)
    assert np.isclose(by["bits"]["logscore_leaf"], -7 * np.log(0.9))
    assert by["bits"]["covered_90"] == 1.0


def test_a_run_loaded_with_probabilities_keeps_its_chains(tmp_path: Path):
    run = load_run(digits_run(tmp_path, {"3": 1.0}), probabilities=True)
    assert run.answers is not None and len(run.answers.chains) == 2
    again = load_run(run.manifest.folder, probabilities=True)  # read back from .columns
    assert again.answers is not None
    assert np.array_equal(again.answers.chains.p, run.answers.chains.p)


@pytest.mark.parametrize("chunk", [1, 7, 300])
def test_scoring_a_block_at_a_time_gives_the_same_scores(worse: Path, monkeypatch, chunk: int):
    """Blocks of ``chunk`` leaves (one output never split) give every output's scores and the
    section's rows as one block does."""
    from analysis.statistics import output_scores
    from analysis.statistics.distributions import distribution_stats

    log = load_answers(sorted(p for p in worse.iterdir() if p.is_dir())[0])
    decoders, conditions = tuple(log.names["decoder"]), tuple(log.names["condition"])
    whole = scored_outputs(log)
    rows = distribution_stats(log, decoders, conditions).rows
    monkeypatch.setattr(output_scores, "CHUNK", chunk)
    blocked = scored_outputs(log)
    assert np.array_equal(whole.job, blocked.job) and np.array_equal(whole.decoder, blocked.decoder)
    # Equal but for rounding: F's cumulative sums run over the owners scored together.
    for name, values in whole.scores.items():
        assert np.allclose(values, blocked.scores[name], equal_nan=True, rtol=1e-11, atol=1e-9), (
            name
        )
    for one, many in zip(rows, distribution_stats(log, decoders, conditions).rows, strict=True):
        assert (one.decoder, one.condition, one.scored, one.zero_mass, one.pit_counts) == (
            many.decoder, many.condition, many.scored, many.zero_mass, many.pit_counts
        )  # fmt: skip
        for name in one.mean:
            assert np.allclose(one.mean[name], many.mean[name], rtol=1e-11, equal_nan=True)
            assert np.allclose(one.interval[name], many.interval[name], rtol=1e-11, equal_nan=True)
