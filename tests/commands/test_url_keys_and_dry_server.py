"""A key in a base URL's query string is refused everywhere and never printed (issue 43
item 6); the dry run names the server it would call and whether its key is set (item 7)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.backends.http.endpoint import shown_url
from tests.runhelpers import cli

SECRET = "sk-SECRET123"
LEAKY = f"http://127.0.0.1:9/v1?api_key={SECRET}"
ONE = ["--param", "per_operator=1"]


def _profile(path: Path) -> None:
    path.write_text(f'[models.leaky]\nmodel = "jev-sim"\nbase_url = "{LEAKY}"\n')


@pytest.mark.parametrize(
    "argv",
    [
        ("config",),
        ("run", *ONE, "--model", "leaky", "--dry-run"),
        ("run", *ONE, "--model", "leaky"),
        ("probe", "--model", "leaky"),
    ],
)
def test_a_key_in_a_profiles_url_is_refused_naming_the_line_never_shown(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    argv: tuple[str, ...],
) -> None:
    monkeypatch.chdir(tmp_path)
    _profile(tmp_path / "numericjev.toml")
    assert cli(*argv, *(["--run", str(tmp_path / "r")] if argv[0] == "run" else [])) != 0
    out = capsys.readouterr()
    assert SECRET not in out.out + out.err
    assert f"{tmp_path / 'numericjev.toml'}:3" in out.err
    assert "query string" in out.err
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("dry", [True, False])
def test_a_key_in_base_url_on_the_command_line_is_refused_never_shown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], dry: bool
) -> None:
    argv = ["run", *ONE, "--model", "jev-sim", "--base-url", LEAKY, "--run", str(tmp_path / "r")]
    assert cli(*argv, *(["--dry-run"] if dry else [])) != 0
    out = capsys.readouterr()
    assert SECRET not in out.out + out.err
    assert "query string" in out.err
    assert not (tmp_path / "r").exists()


@given(st.text(min_size=1).filter(lambda t: "?" not in t and "#" not in t))
def test_shown_url_hides_any_query(secret: str) -> None:
    # The whole query becomes the mask (a secret "*" is inside the mask, not shown).
    assert shown_url(f"https://host.example/v1?k=v&x={secret}") == "https://host.example/v1?***"
    assert shown_url(f"https://host.example/v1?{secret}") == "https://host.example/v1?***"


def test_the_dry_run_names_the_hosted_server_and_an_unset_key(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for variable in ("TYPESAFE_API_KEY", "TYPESAFE_BASE_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(variable, raising=False)
    assert cli("run", *ONE, "--model", "jev-latest", "--dry-run") == 0
    out = capsys.readouterr().out
    assert "server: https://api.typesafe.ai (a hosted API" in out
    assert "key: $TYPESAFE_API_KEY is not set (the run would refuse" in out
    assert cli("run", *ONE, "--model", "gpt-x", "--wire", "openai-chat", "--dry-run") == 0
    out = capsys.readouterr().out
    assert "server: https://api.openai.com (a hosted API" in out
    assert "key: $OPENAI_API_KEY is not set" in out


def test_the_dry_run_reads_a_profiles_key_env(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MY_KEY", raising=False)
    (tmp_path / "numericjev.toml").write_text(
        '[models.mine]\nmodel = "jev-sim"\nbase_url = "http://127.0.0.1:9"\nkey_env = "MY_KEY"\n'
    )
    assert cli("run", *ONE, "--model", "mine", "--dry-run") == 0
    out = capsys.readouterr().out
    assert "server: http://127.0.0.1:9 (" in out
    assert "key: $MY_KEY is not set (the run would refuse" in out
    monkeypatch.setenv("MY_KEY", "k")
    assert cli("run", *ONE, "--model", "mine", "--dry-run") == 0
    assert "key: $MY_KEY is set" in capsys.readouterr().out
