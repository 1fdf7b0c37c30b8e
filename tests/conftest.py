"""Shared test configuration: Hypothesis settings profiles.

``fast`` (the default) keeps the whole suite to a few tens of seconds; ``ci`` runs more
examples. Pick one with ``HYPOTHESIS_PROFILE=ci`` or ``pytest --hypothesis-profile=ci``.
``deadline=None`` in both: a few examples build 255-option questions or million-cell grids,
and a per-example deadline would make their timing, not their result, fail the test.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

settings.register_profile("fast", max_examples=100, deadline=None)
settings.register_profile("ci", max_examples=1000, deadline=None, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "fast"))


PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")


@pytest.fixture(autouse=True)
def _no_proxy_from_the_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    """The HTTP sender honours the environment's proxies; tests talk to loopback servers
    directly unless a test sets a proxy itself."""
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)


@pytest.fixture(autouse=True)
def _no_shared_request_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests never read or write the user's request cache: the command line's is off unless
    a test turns it on (``--cache``), and any cache is in the test's own folder."""
    monkeypatch.setenv("NUMERICJEV_CACHE_MODE", "off")
    monkeypatch.setenv("NUMERICJEV_CACHE", str(tmp_path / "request-cache.sqlite3"))


@pytest.fixture(autouse=True)
def _no_user_settings_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests never read the user's numericjev.toml (harness.config): the XDG folder is the
    test's own, empty unless a test writes one."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
