"""Finding and reading ``numericjev.toml`` files, and naming the line a key sits on."""

from __future__ import annotations

import difflib
import os
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import ConfigError

CONFIG_NAME = "numericjev.toml"
_HEADER = re.compile(r"^\s*\[\s*([^\[\]]+?)\s*\]\s*(#.*)?$")
_ASSIGN = re.compile(r"""^\s*("[^"]*"|'[^']*'|[A-Za-z0-9_-]+)\s*=""")


def config_paths(
    cwd: Path | None = None, environ: Mapping[str, str] | None = None
) -> tuple[Path, Path]:
    """The user's file and the working folder's, farthest first (the nearer one wins)."""
    environ = os.environ if environ is None else environ
    home = environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(home) / "numericjev" / CONFIG_NAME, (cwd or Path.cwd()) / CONFIG_NAME


@dataclass(frozen=True)
class Setting:
    """One value a file (or the environment) gives, and where: ``PATH:LINE``,
    ``profile NAME (PATH:LINE)`` or ``$VARIABLE``."""

    value: Any
    source: str
    replaces: bool = False  # a profile's spec: replaces the profile's name on the command line


@dataclass(frozen=True)
class ConfigFile:
    """One settings file as read: its path, text and parsed tables."""

    path: Path
    text: str
    data: Mapping[str, Any]

    def where(self, table: tuple[str, ...], key: str | None = None) -> str:
        """``PATH:LINE`` of ``key`` in ``[table]`` (its header's line when ``key`` is None
        or cannot be found, e.g. in an inline table)."""
        return f"{self.path}:{line_of(self.text, table, key)}"


def did_you_mean(key: str, known: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the known name nearest a mistyped ``key``, or ``""``."""
    close = difflib.get_close_matches(key, list(known), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def line_of(text: str, table: tuple[str, ...], key: str | None) -> int:
    """The 1-based line of ``key = ...`` under ``[table]``; else the header's (or, for an
    inline table, its own key's line under the parent table); else 1."""
    current: tuple[str, ...] = ()
    header: int | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        if found := _HEADER.match(line):
            current = tuple(part.strip().strip("\"'") for part in found.group(1).split("."))
            if current == table and header is None:
                header = number
                if key is None:
                    return number
        elif (
            key is not None
            and current == table
            and (found := _ASSIGN.match(line))
            and found.group(1).strip("\"'") == key
        ):
            return number
    if header is not None:
        return header
    return line_of(text, table[:-1], table[-1]) if len(table) > 1 else 1


def read_config(path: Path) -> ConfigFile | None:
    """The file at ``path`` read and parsed; None when there is none; bad TOML is one line."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read the settings file: {exc}") from exc
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from exc
    return ConfigFile(path, text, data)
