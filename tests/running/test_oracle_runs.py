"""Oracle runs are exact labels, labelled as such; served models are checked against it first."""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import orjson
import pytest

from analysis.cli import main as analysis_main
from analysis.loading.run import load_run
from analysis.statistics.design import design_of
from analysis.statistics.facts import ORACLE_NOTICE, SIMULATED_NOTICE, run_facts
from analysis.statistics.metrics import compute_metrics
from harness.protocol.cases import Case, Suite
from harness.protocol.grid import Grid
from harness.protocol.registry import register_suite
from harness.serve import ServerConfig, serve_sim_in_thread
from tests.runhelpers import cli, records


def facts(folder: Path):  # type: ignore[no-untyped-def]
    run = load_run(folder)
    return run_facts(run, compute_metrics(run.outputs, design_of(run.manifest, run.outputs)))


def test_run_model_oracle_answers_the_historical_suites_as_check_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for suite in ("historical", "historical_binary"):
        folder = tmp_path / suite
        assert cli("run", "--suite", suite, "--model", "oracle", "--run", str(folder),
                   "--no-progress") == 0  # fmt: skip
        lines = records(folder / "outputs.jsonl")
        assert lines and all(r["value"] == r["target"] for r in lines)  # recall included
        assert all(r["oracle"] is True and r["simulated"] is False for r in lines)
        manifest = orjson.loads((folder / "manifest.json").read_bytes())
        assert manifest["model"]["simulated"] is False and manifest["model"]["oracle"] is True
    out = capsys.readouterr().out
    assert "model: ORACLE (exact labels" in out and "SIMULATED" not in out
    f = facts(tmp_path / "historical")
    assert f.oracle and not f.simulated and f.notice == ORACLE_NOTICE
    assert analysis_main(["analyze", str(tmp_path / "historical"), "--no-probabilities"]) == 0
    text = capsys.readouterr().out
    assert ORACLE_NOTICE in text and SIMULATED_NOTICE not in text
    assert cli("status", str(tmp_path / "historical")) == 0
    assert "(ORACLE: exact labels)" in capsys.readouterr().out


def test_older_oracle_runs_that_called_themselves_simulated_read_as_oracle(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "old"
    assert cli("run", "--suite", "exploratory", "--model", "oracle", "--run", str(folder),
               "--no-progress") == 0  # fmt: skip
    manifest = orjson.loads((folder / "manifest.json").read_bytes())
    manifest["model"]["simulated"] = True
    del manifest["model"]["oracle"]
    (folder / "manifest.json").write_bytes(orjson.dumps(manifest))
    lines = [{**r, "simulated": True} for r in records(folder / "outputs.jsonl")]
    for r in lines:
        r.pop("oracle")
    (folder / "outputs.jsonl").write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in lines))
    f = facts(folder)
    assert f.oracle and not f.simulated and f.notice == ORACLE_NOTICE


def _broken(seed: int = 1, decoders: tuple[str, ...] = ("tree4",)) -> Suite:
    # 1/2 is no value of the 16-cell integer grid: no decoder can recover it.
    grid = Grid(Decimal(0), Decimal(1), 16)
    case = Case("f0/int", 0, "int", {"expression": "1 / 2"}, Fraction(1, 2), grid)
    return Suite("broken_plugin", seed, (case,), decoders)


def test_a_served_model_is_refused_when_the_oracle_check_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    register_suite("broken_plugin", _broken, replace=True)
    folder = tmp_path / "refused"
    args = ["run", "--suite", "broken_plugin", "--model", "jev-sim", "--run", str(folder),
            "--no-progress", "--base-url"]  # fmt: skip
    assert cli(*args, "http://127.0.0.1:9") == 2
    err = capsys.readouterr().err
    assert "oracle check failed on suite broken_plugin: 0 of 4 outputs recovered" in err
    assert "--skip-check" in err and not folder.exists()
    with serve_sim_in_thread(ServerConfig(port=0)) as url:
        assert cli(*args, url, "--skip-check") == 0
    assert len(records(folder / "outputs.jsonl")) == 4
    # The built-in models are not checked: the check is for paid requests.
    assert cli("run", "--suite", "broken_plugin", "--run", str(tmp_path / "sim"),
               "--no-progress") == 0  # fmt: skip
    assert cli("compare", "--models", "sim,jev-sim", "--suites", "broken_plugin",
               "--base-url", "http://127.0.0.1:9", "--out", str(tmp_path / "c")) == 2  # fmt: skip
    assert "oracle check failed" in capsys.readouterr().err
    assert not (tmp_path / "c").exists()
