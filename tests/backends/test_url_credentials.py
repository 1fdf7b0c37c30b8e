"""Base URLs with odd parts (issue 32, case 4): credentials are the request's basic auth and
scrubbed everywhere, or refused in one line; no URL ends in a traceback or a half-made folder.
"""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
import yarl
from hypothesis import given
from hypothesis import strategies as st

from harness.backends.decisions import OpenAIDecisionsBackend
from harness.backends.systemone import SystemOneBackend
from harness.errors import ConfigError
from harness.serve import serve_sim_in_thread
from tests.backends.test_systemone import BODY, ok_response
from tests.loopback import Reply, Seen, scripted_server
from tests.runhelpers import SMALL, cli

SECRET = "Zq9SECRET"  # no other part of a generated URL can spell it (lowercase, digits)

_word = st.text("abcdefghijklmnopqrstuvwxyz0123456789-", min_size=1, max_size=8)
_userinfo = st.one_of(
    st.just(""),
    st.just("@"),
    st.just(":@"),
    _word.map(lambda user: f"{user}@"),
    _word.map(lambda user: f"{user}:{SECRET}@"),
    _word.map(lambda user: f"{user}:{SECRET}%40x@"),  # an escaped "@" in the password
    _word.map(lambda user: f"{user}:{SECRET}@x@"),  # a raw one
    _word.map(lambda user: f"{user}:{SECRET}/x@"),  # a "/" that ends the authority early
)
_host = st.one_of(
    _word,
    st.just("127.0.0.1"),
    st.just("[::1]"),
    st.just("[fe80::1%25eth0]"),
    st.just("[::1"),  # unclosed
    st.just(""),
)
_port = st.one_of(st.just(""), st.sampled_from([":80", ":8377", ":0", ":65536", ":x", ":"]))
_path = st.one_of(st.just(""), st.lists(_word, max_size=3).map(lambda p: "/" + "/".join(p)))
_tail = st.one_of(st.just(""), _word.map(lambda q: f"?{q}=1"), _word.map(lambda f: f"#{f}"))
_scheme = st.sampled_from(["http://", "https://", "HTTP://", "ftp://", ""])
URLS = st.builds(lambda *parts: "".join(parts), _scheme, _userinfo, _host, _port, _path, _tail)


@given(
    url=URLS, key=st.sampled_from(["", "sk-key"]), wire=st.sampled_from(["systemone", "decisions"])
)
def test_any_base_url_is_used_or_refused_in_one_line_that_shows_no_secret(
    url: str, key: str, wire: str
) -> None:
    try:
        if wire == "systemone":
            backend: SystemOneBackend | OpenAIDecisionsBackend = SystemOneBackend(
                "jev-latest", base_url=url, api_key=key, env={}
            )
        else:
            backend = OpenAIDecisionsBackend("m", base_url=url, env={"OPENAI_API_KEY": key})
    except ConfigError as exc:
        message = str(exc)
        assert SECRET not in message and "\n" not in message
        return
    sent = yarl.URL(backend.http.url)  # where requests go, as aiohttp reads it
    assert sent.scheme in ("http", "https") and sent.host and not sent.query_string
    credentials = sent.user is not None or sent.password is not None
    assert not (key and credentials), "a key and URL credentials: aiohttp would raise"
    described = str(backend.describe())
    assert SECRET not in described and SECRET not in repr(backend)


async def test_url_credentials_are_the_basic_auth_of_each_request() -> None:
    seen: list[Seen] = []

    def handler(request: Seen) -> Reply:
        seen.append(request)
        return ok_response(request)

    async with scripted_server(handler) as url:
        with_credentials = url.replace("http://", f"http://user:{SECRET}@")
        async with SystemOneBackend(
            "jev-latest", base_url=with_credentials, api_key="", env={}
        ) as backend:
            await backend.answer(BODY)
            assert SECRET not in str(backend.describe())
    expected = base64.b64encode(f"user:{SECRET}".encode()).decode()
    assert seen[0].headers["authorization"] == f"Basic {expected}"


def test_url_credentials_beside_a_key_are_refused_in_one_line_before_any_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Before issue 32: 17 tracebacks (aiohttp refuses both), and a run folder left behind.
    monkeypatch.setenv("TYPESAFE_API_KEY", "sk-test-key")
    folder = tmp_path / "run"
    url = f"http://user:{SECRET}@127.0.0.1:9"
    code = cli("run", *SMALL, "--model", "jev-latest", "--base-url", url, "--run", str(folder),
               "--skip-check", "--no-progress")  # fmt: skip
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "Authorization" in err[0], err
    assert SECRET not in err[0] and "sk-test-key" not in err[0]
    assert not folder.exists()


def test_a_run_with_url_credentials_keeps_them_out_of_the_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TYPESAFE_API_KEY", raising=False)
    folder = tmp_path / "run"
    with serve_sim_in_thread() as url:
        with_credentials = url.replace("http://", f"http://user:{SECRET}@")
        assert cli("run", *SMALL, "--model", "jev-latest", "--base-url", with_credentials,
                   "--run", str(folder), "--skip-check", "--no-progress") == 0  # fmt: skip
    for path in folder.iterdir():
        assert SECRET.encode() not in path.read_bytes(), path.name
