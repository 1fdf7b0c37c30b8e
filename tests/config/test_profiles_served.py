"""Profiles end to end: a suite against a /v1/systemone server (serve-sim on loopback) with
the profile's price in the manifest, a key read from the variable key_env names, and
``compare --models A,B`` with two profiles."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from harness.serve import ServerConfig, serve_sim_in_thread
from runfolder import load_manifest
from tests.runhelpers import SMALL, cli, records

KEY = "nj-profile-key-0123456789-PLANTED"


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def profile(name: str, url: str, extra: str = "") -> str:
    return (
        f'[models.{name}]\nmodel = "jev-sim"\nbase_url = "{url}"\n'
        f"price_per_million = 0.5\nprice_per_million_output = 2.0\nconcurrency = 4\n{extra}"
    )


def test_a_profile_runs_against_a_systemone_server_and_its_price_is_recorded(
    here: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_JEV_KEY", KEY)
    with serve_sim_in_thread(ServerConfig(port=0, key=KEY)) as url:
        (here / "numericjev.toml").write_text(profile("local", url, 'key_env = "MY_JEV_KEY"\n'))
        assert cli("run", "--model", "local", *SMALL, "--run", "r", "--no-progress") == 0
    manifest = load_manifest(here / "r")
    assert manifest.model.name == "jev-sim" and manifest.model.base_url == url
    assert manifest.model.price_usd_per_million_input == 0.5
    price = manifest.model.params["price"]
    assert price == {
        "input_usd_per_million": 0.5,
        "output_usd_per_million": 2.0,
        "source": "override",
    }
    assert manifest.model.params["key_env"] == "MY_JEV_KEY"
    assert manifest.limits["concurrency"] == 4  # the profile's
    costs = [r["cost_usd"] for r in records(here / "r" / "requests.jsonl")]
    assert costs and all(cost is not None and cost > 0 for cost in costs)
    written = b"".join(p.read_bytes() for p in (here / "r").rglob("*") if p.is_file())
    assert KEY.encode() not in written


def test_a_key_env_that_is_not_set_is_one_line_before_anything_is_written(
    here: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("NOT_SET_KEY", raising=False)
    (here / "numericjev.toml").write_text(
        profile("local", "http://127.0.0.1:9", 'key_env = "NOT_SET_KEY"\n')
    )
    assert cli("run", "--model", "local", *SMALL, "--run", "r", "--skip-check") == 2
    err = capsys.readouterr().err
    assert "$NOT_SET_KEY (key_env), which is not set" in err and err.count("\n") == 1
    assert not (here / "r").exists()


def test_compare_takes_two_profiles(here: Path) -> None:
    with serve_sim_in_thread(ServerConfig(port=0)) as url:
        (here / "numericjev.toml").write_text(
            profile("served", url, "timeout = 7.5\n")
            + '\n[models.noisy]\nmodel = "sim"\nknobs = {seed = 7}\n'
        )
        status = cli(
            "compare", "--models", "served,noisy", "--suites", "affine",
            "--param", "per_operator=1", "--out", "cmp", "--no-progress", "--bootstrap", "0",
        )  # fmt: skip
    assert status == 0
    # Each profile's run settings go to its own model's cells, the others keep the defaults.
    served, noisy = (load_manifest(c) for c in sorted((here / "cmp").glob("affine-*")))
    assert served.limits["concurrency"] == 4 and served.model.params["timeout_s"] == 7.5
    assert noisy.limits["concurrency"] == 64
    record = orjson.loads((here / "cmp" / "compare.json").read_bytes())
    assert record["models"] == [
        f"jev-sim:base_url={url},price_per_million=0.5,price_per_million_output=2",
        "sim:seed=7",
    ]
    cells = sorted(p for p in (here / "cmp").iterdir() if p.is_dir())
    prices = {load_manifest(c).model.price_usd_per_million_input for c in cells}
    assert prices == {0.5, 0.0}


def test_resume_reads_the_key_from_the_same_variable_and_keeps_the_price(
    here: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MY_JEV_KEY", KEY)
    with serve_sim_in_thread(ServerConfig(port=0, key=KEY)) as url:
        (here / "numericjev.toml").write_text(profile("local", url, 'key_env = "MY_JEV_KEY"\n'))
        args = ("--model", "local", *SMALL, "--run", "r", "--no-progress")
        assert cli("run", *args, "--max-requests", "40") == 1
        monkeypatch.delenv("MY_JEV_KEY")
        assert cli("resume", "r", "--no-progress") == 2
        assert "$MY_JEV_KEY (key_env), which is not set" in capsys.readouterr().err
        monkeypatch.setenv("MY_JEV_KEY", KEY)
        assert cli("resume", "r", "--no-progress") == 0
    costs = [r["cost_usd"] for r in records(here / "r" / "requests.jsonl")]
    assert len(costs) > 40 and all(cost is not None and cost > 0 for cost in costs)
