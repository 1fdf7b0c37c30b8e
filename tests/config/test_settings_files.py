"""numericjev.toml: profiles and [defaults] checked line by line; the nearer file and the
command line win; ``numericjev config`` says where each setting came from."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.backends import parse_model
from harness.config import load_settings
from harness.config.files import line_of
from harness.errors import ConfigError
from runfolder import load_manifest
from tests.runhelpers import SMALL, cli

PROFILES = """\
[defaults]
concurrency = 8
no-progress = true

[models.noisy]
model = "sim"
knobs = {confusion = 0.3, seed = 7}

[models.served]
model = "jev-sim"
base_url = "http://127.0.0.1:9"
price_per_million = 0.5
price_per_million_output = 2.0
timeout = 5
"""


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working folder of the test's own (where ./numericjev.toml is read)."""
    folder = tmp_path / "work"
    folder.mkdir()
    monkeypatch.chdir(folder)
    return folder


def write(folder: Path, text: str) -> Path:
    path = folder / "numericjev.toml"
    path.write_text(text)
    return path


def test_a_profile_resolves_to_a_spec_that_reads_back(here: Path) -> None:
    write(here, PROFILES)
    settings = load_settings()
    served = settings.profiles["served"]
    spec = parse_model(served.spec_text())
    assert (spec.name, spec.base_url) == ("jev-sim", "http://127.0.0.1:9")
    assert (spec.price_per_million, spec.price_per_million_output) == (0.5, 2.0)
    assert settings.profiles["noisy"].spec_text() == "sim:confusion=0.3,seed=7"
    assert settings.defaults["concurrency"].source == f"{here / 'numericjev.toml'}:2"


def test_a_sim_profile_runs_and_the_manifest_records_the_spec_not_the_file(here: Path) -> None:
    write(here, PROFILES)
    assert cli("run", "--model", "noisy", *SMALL, "--run", "r", "--concurrency", "3") == 0
    manifest = load_manifest(here / "r")
    assert manifest.model.label == "sim:seed=7,confusion=0.3"
    assert manifest.limits["concurrency"] == 3  # the command line wins over [defaults]
    assert "numericjev.toml" not in (here / "r" / "manifest.json").read_text()


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        (
            "[models.a]\nwire = 'openai-chat'\nmodle = 'x'\n",
            3,
            "no field 'modle' (did you mean 'model'?); its fields",
        ),
        ("[models.a]\nconcurrency = '8'\n", 2, "concurrency must be a whole number >= 1"),
        ("[models.a]\nprice_per_million = -1\n", 2, "must be a number >= 0"),
        ("[models.a]\n\napi_key = 'sk-123'\n", 3, "keys never go in a file"),
        ("[models.a]\nkey_env = 'sk-abc-123'\n", 2, "NAME of an environment variable"),
        ("[models.a]\nbase_url = 'http://u:pw@h'\n", 2, "without a password"),
        ("[models.a]\nknobs = {seed = 1}\n", 2, 'knobs are the sim\'s: set model = "sim"'),
        ("[models]\na = {wire = 'x'}\n", 2, "wire must be one of systemone"),
        ("[defaults]\nconcurency = 8\n", 2, "no option 'concurency' (did you mean 'concurrency'?)"),
        ("[defaults]\n\nconcurrency = 'eight'\n", 3, "--concurrency takes a whole number"),
        ("[defaults]\ncache = 'sometimes'\n", 2, "--cache takes one of auto"),
        ("[defaults]\nno_progress = 1\n", 2, "takes true or false"),
        (
            "[default]\nconcurrency = 8\n",
            1,
            "unknown table or key 'default' (did you mean 'defaults'?)",
        ),
        (
            "[models.a]\nbase_ulr = 'http://h'\n",
            2,
            "no field 'base_ulr' (did you mean 'base_url'?)",
        ),
        ("[models.a\n", 1, "not valid TOML"),
    ],
)
def test_bad_files_are_one_line_naming_file_and_line(
    here: Path, capsys: pytest.CaptureFixture[str], text: str, line: int, message: str
) -> None:
    path = write(here, text)
    assert cli("run", "--model", "sim", *SMALL, "--dry-run") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err
    assert f"{path}:{line}" in err or f"line {line}" in err, err


def test_a_key_pasted_into_the_file_never_reaches_the_message(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    secret = "sk-PLANTED-0123456789abcdef"
    for text in (
        f"[models.a]\nkey_env = '{secret}'\n",
        f"[models.a]\nbase_url = 'https://u:{secret}@h'\n",
        f"[models.a]\napi_key = '{secret}'\n",
        f"[defaults]\nbase_url = 'https://u:{secret}@h'\n",
    ):
        write(here, text)
        assert cli("run", "--dry-run") == 2
        err = capsys.readouterr().err
        assert secret not in err and err.count("\n") == 1, err


def test_a_typo_of_a_profile_name_is_refused_not_sent(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(here, PROFILES)
    assert cli("run", "--model", "servd", "--dry-run") == 2
    assert "did you mean 'served'" in capsys.readouterr().err
    assert cli("compare", "--models", "noisy,nosiy", "--suites", "affine") == 2
    assert "did you mean 'noisy'" in capsys.readouterr().err


def test_the_nearer_file_wins_and_the_command_line_wins_over_both(
    here: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    user = tmp_path / "xdg-config" / "numericjev"
    user.mkdir(parents=True)
    (user / "numericjev.toml").write_text(
        "[defaults]\nconcurrency = 2\nsuite = 'exploratory'\n[models.served]\nmodel = 'far'\n"
    )
    write(here, PROFILES)
    assert cli("config", "run", "--model", "served", "--timeout", "9") == 0
    out = capsys.readouterr().out
    near = here / "numericjev.toml"
    assert f"concurrency = 8  ({near}:2)" in out
    assert f"suite = 'exploratory'  ({user / 'numericjev.toml'}:3)" in out
    assert "timeout = 9.0  (command line)" in out
    assert f"model = 'jev-sim'  (profile served ({near}:9))" in out  # the near profile whole
    assert "top_logprobs = 20  (default)" in out
    assert cli("config") == 0
    out = capsys.readouterr().out
    assert "served = jev-sim:base_url=http://127.0.0.1:9,price_per_million=0.5" in out
    assert f"{near}  (read)" in out


def test_command_line_options_replace_a_profiles_spec_options(here: Path) -> None:
    write(here, PROFILES)
    settings = load_settings()
    text = settings.profiles["served"].spec_text(frozenset({"base_url"}))
    assert "base_url" not in text and "price_per_million=0.5" in text


@given(
    st.lists(
        st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True), min_size=1, max_size=6, unique=True
    )
)
def test_every_key_is_found_on_its_own_line(keys: list[str]) -> None:
    lines = ["# settings", "[defaults]", *(f"{k} = 1" for k in keys)]
    text = "\n".join(lines) + "\n"
    for number, key in enumerate(keys, start=3):
        assert line_of(text, ("defaults",), key) == number


def test_a_spec_option_and_the_same_option_on_the_command_line_are_refused() -> None:
    from harness.backends import ModelSpec

    with pytest.raises(ConfigError, match="and so does --price-per-million"):
        parse_model("jev:price_per_million=1", ModelSpec(price_per_million=2.0))


def test_config_without_a_file_still_says_where_each_value_came_from(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli("config", "status", "latest") == 0
    assert "run_folder = PosixPath('latest')  (command line)" in capsys.readouterr().out
    assert cli("config", "run", "--conc", "3") == 0  # an abbreviation, as argparse reads it
    out = capsys.readouterr().out
    assert "concurrency = 3  (command line)" in out and "suite = 'affine'  (default)" in out
    assert cli("config") == 0
    assert "profiles: none" in capsys.readouterr().out
    assert cli("config", "analyze", "latest") == 2  # analysis takes no settings


def test_config_shows_a_profile_as_the_source_of_each_option_it_sets(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(
        here,
        PROFILES + "wire = 'openai-chat'\nkey_env = 'MY_KEY'\n",
    )
    assert cli("config", "run", "--model", "served", "--price-per-million", "0.7") == 0
    out = capsys.readouterr().out
    served = f"profile served ({path}"
    assert f"wire = 'openai-chat'  ({served}:15))" in out
    assert f"base_url = 'http://127.0.0.1:9'  ({served}:11))" in out
    assert f"price_per_million_output = 2.0  ({served}:13))" in out
    assert f"timeout = 5.0  ({served}:14))" in out
    assert "price_per_million = 0.7  (command line)" in out
    assert f"model = 'jev-sim:key_env=MY_KEY'  ({served}:9))" in out
