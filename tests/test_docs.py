"""The README stays short and the docs site lists every page (``make docs`` builds it with
``--strict``, which fails on a broken link)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_readme_is_short_and_starts_with_the_two_commands() -> None:
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 250
    first_block = text[text.index("```sh") : text.index("```", text.index("```sh") + 5)]
    assert "make run" in first_block and "make test" in first_block


def test_every_page_is_in_the_nav_and_every_nav_entry_exists() -> None:
    nav = set(re.findall(r"^\s+- [^:]+: ([\w\-]+\.md)$", (ROOT / "mkdocs.yml").read_text(), re.M))
    pages = {p.name for p in (ROOT / "docs").glob("*.md")}
    assert nav == pages


def test_the_readme_links_only_to_pages_that_exist() -> None:
    text = (ROOT / "README.md").read_text()
    for target in re.findall(r"\]\((docs/[^)#]+)", text):
        assert (ROOT / target).exists(), target
