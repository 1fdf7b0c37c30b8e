"""The sim-study commands take a ``numericjev.toml`` profile's name where they take a sim spec
(``power --model``, ``sim-vs-paper --model``, ``fit-sim --start``), as every command does."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from harness.backends.sim.params import RATES
from tests.runhelpers import cli

EXACT = {k: 0 for k in RATES}  # every mechanism off: an exact reader
SMALL = ("--param", "per_operator=2", "--families", "4", "--replicates", "5", "--json")


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    knobs = ", ".join(f"{k} = {v}" for k, v in EXACT.items())
    (tmp_path / "numericjev.toml").write_text(
        f'[models.exact]\nmodel = "sim"\nknobs = {{{knobs}}}\n\n'
        '[models.served]\nmodel = "jev-sim"\nbase_url = "http://127.0.0.1:9"\n'
    )
    return tmp_path


@pytest.mark.usefixtures("here")
def test_power_reads_a_sim_profile_as_its_spec(capsys: pytest.CaptureFixture[str]) -> None:
    spec = "sim:" + ",".join(f"{k}={v}" for k, v in EXACT.items())
    found = []
    for model in ("exact", spec):
        assert cli("power", "--model", model, "--vary", "slip_ten=1", *SMALL) == 0
        found.append(orjson.loads(capsys.readouterr().out)["baseline"])
    assert found[0] == found[1]


@pytest.mark.usefixtures("here")
@pytest.mark.parametrize(
    "args",
    [
        ("power", "--model", "served", "--vary", "slip_ten=1"),
        ("sim-vs-paper", "--model", "served"),
        ("fit-sim", "latest", "--start", "served"),
    ],
    ids=["power", "sim-vs-paper", "fit-sim"],
)
def test_a_profile_that_is_not_a_sim_s_is_one_line(
    args: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli(*args) == 2
    err = capsys.readouterr().err
    assert "profile 'served' (" in err and "is not a sim spec" in err and err.count("\n") == 1
