"""compare takes run's model options (one definition, ``add_model_options``) and applies each
named profile's run settings (concurrency, rps, timeout, max_attempts, cache) to that model's
cells; the command line wins over a profile, a profile over ``[defaults]`` and the
environment."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from runfolder import REQUESTS, load_manifest
from tests.runhelpers import cached_entries, cli

PROFILES = """
[defaults]
concurrency = 5

[models.cached]
model = "sim"
knobs = {seed = 7}
concurrency = 3
cache = "read-write"
"""
ARGS = ("--suites", "affine", "--param", "per_operator=1", "--no-progress", "--bootstrap", "0")


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "numericjev.toml").write_text(PROFILES)
    yield tmp_path


def test_a_profile_s_run_settings_go_to_its_own_cells(here: Path) -> None:
    # The environment says off (tests/conftest.py): the profile's read-write wins over it.
    assert cli("compare", "--models", "sim,cached", *ARGS, "--out", "cmp") == 0
    plain, profiled = (load_manifest(c) for c in sorted((here / "cmp").glob("affine-*")))
    assert plain.limits["concurrency"] == 5 and profiled.limits["concurrency"] == 3
    lines = next((here / "cmp").glob(f"affine-m2-*/{REQUESTS}")).read_bytes().count(b"\n")
    assert cached_entries() == lines  # the profiled sim's cell only


def test_the_command_line_wins_over_a_profile(here: Path) -> None:
    args = ("--out", "cmp", "--concurrency", "2", "--cache", "off")
    assert cli("compare", "--models", "sim,cached", *ARGS, *args) == 0
    cells = [load_manifest(c) for c in sorted((here / "cmp").glob("affine-*"))]
    assert [c.limits["concurrency"] for c in cells] == [2, 2]
    assert cached_entries() == 0


def test_compare_takes_run_s_model_options_for_every_served_model(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert cli("compare", "--max-attempts", "0", "--models", "sim,x", "--suites", "affine") == 2
    assert capsys.readouterr().err.endswith("--max-attempts must be at least 1; got 0\n")
    status = cli(
        "compare", "--dry-run", "--models", "sim,gpt-x", "--suites", "affine",
        "--param", "per_operator=1", "--wire", "openai-chat", "--top-logprobs", "5",
        "--base-url", "http://127.0.0.1:9", "--price-per-million", "1",
        "--price-per-million-output", "2",
    )  # fmt: skip
    assert status == 0
    out = capsys.readouterr().out
    sim, served = out.split("cell affine x gpt-x:")
    assert "HTTP calls: none (answered in process)" in sim  # --wire is the served models'
    assert "HTTP calls (openai-chat: one per question)" in served
    assert "USD 1 in, 2 out per million tokens" in served


@pytest.mark.usefixtures("here")
def test_config_shows_each_model_s_own_settings(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli("config", "compare", "--models", "sim,cached", "--suites", "affine") == 0
    out = capsys.readouterr().out
    assert (
        "per_model = {'sim:seed=7': {'concurrency': 3, 'cache': 'read-write'}}  (profiles " in out
    )
