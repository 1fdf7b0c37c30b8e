"""``[models.NAME]`` profiles: checked field by field, then read as one model spec's text."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from harness.cache.lookup import MODES as CACHE_MODES
from harness.config.files import ConfigFile, Setting, did_you_mean
from harness.errors import ConfigError
from harness.wire import WIRES

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
QUIET = ("key_env", "base_url")  # fields a key may be pasted into by mistake
# Keys that would hold a secret: refused, whatever their value.
SECRET_FIELDS = ("key", "api_key", "apikey", "token", "secret", "password", "authorization")


def _text(value: Any) -> str | None:
    return "a string" if not isinstance(value, str) or not value.strip() else None


def _whole(low: int) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        ok = isinstance(value, int) and not isinstance(value, bool) and value >= low
        return None if ok else f"a whole number >= {low}"

    return check


def _number(positive: bool) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        ok = ok and math.isfinite(value) and (value > 0 if positive else value >= 0)
        return None if ok else "a number > 0" if positive else "a number >= 0"

    return check


def _one_of(choices: tuple[str, ...]) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        return None if value in choices else "one of " + ", ".join(choices)

    return check


def url_problem(value: Any) -> str | None:
    """What is wrong with ``value`` as a server's URL in a file (None: nothing)."""
    if not isinstance(value, str) or not value.startswith(("http://", "https://")):
        return "a URL starting with http:// or https://"
    if urlsplit(value).password is not None:
        return "a URL without a password (name the key's variable with key_env instead)"
    if "?" in value or "#" in value:  # shown nowhere: ``?api_key=...`` is a key
        return "a URL without a query string or fragment (name the key's variable with key_env)"
    return None


def _env_name(value: Any) -> str | None:
    ok = isinstance(value, str) and _ENV_NAME.match(value) is not None
    return None if ok else "the NAME of an environment variable, e.g. OPENAI_API_KEY (not a key)"


def _knobs(value: Any) -> str | None:
    ok = isinstance(value, dict) and all(
        isinstance(v, int | float | str) and not isinstance(v, bool) for v in value.values()
    )
    return None if ok else "a table of sim knobs, e.g. {confusion = 0.3, seed = 7}"


# Every field a profile may hold, with what its value must be (checked in this order).
PROFILE_FIELDS: dict[str, Callable[[Any], str | None]] = {
    "model": _text,  # the model's name (default: the profile's name); "sim" for sim knobs
    "wire": _one_of(WIRES),
    "base_url": url_problem,
    "key_env": _env_name,
    "price_per_million": _number(positive=False),  # USD per million input tokens
    "price_per_million_output": _number(positive=False),
    "concurrency": _whole(1),
    "rps": _number(positive=True),
    "timeout": _number(positive=True),
    "max_attempts": _whole(1),
    "top_logprobs": _whole(1),
    "cache": _one_of(CACHE_MODES),
    "knobs": _knobs,
}
# Of a profile's fields, those of the model spec (written into each model's text by
# ``compare --models A,B``; ``key_env`` has no option, so it is always in the text) ...
SPEC_FIELDS = (
    "base_url",
    "wire",
    "key_env",
    "top_logprobs",
    "price_per_million",
    "price_per_million_output",
)
# ... and the run's settings. With ``--model NAME`` each of both but ``key_env`` is the
# option of the same name's default; ``model``, ``key_env`` and a sim's ``knobs`` the spec.
RUN_FIELDS = ("concurrency", "rps", "timeout", "max_attempts", "cache")
OPTION_FIELDS = tuple(key for key in SPEC_FIELDS + RUN_FIELDS if key != "key_env")


def _text_of(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


@dataclass(frozen=True)
class Profile:
    """One ``[models.NAME]`` table, checked; ``where`` gives each field's ``PATH:LINE``."""

    name: str
    fields: Mapping[str, Any]
    where: Mapping[str, str] = field(default_factory=dict)
    origin: str = ""  # PATH:LINE of the table's header

    @property
    def model(self) -> str:
        """The model's own name: ``model``, else the profile's name."""
        return str(self.fields.get("model", self.name))

    def spec_text(self, given: frozenset[str] = frozenset(), *, whole: bool = True) -> str:
        """The profile as a model spec's text (``jev-sim:base_url=...,price_per_million=0.5``);
        ``given`` names the options (destinations) the command line set, which replace the
        profile's; ``whole=False`` leaves out the fields that are options of their own."""
        options = {
            key: _text_of(self.fields[key])
            for key in SPEC_FIELDS
            if key in self.fields and (key == "key_env" or (whole and key not in given))
        }
        for knob, value in dict(self.fields.get("knobs", {})).items():
            options[knob] = str(value)
        if not options:
            return self.model
        return self.model + ":" + ",".join(f"{k}={v}" for k, v in options.items())

    def settings(self) -> dict[str, Setting]:
        """``--model NAME``: the options the profile gives, by destination, with their
        sources (the model spec's text for ``model``)."""
        found = {"model": Setting(self.spec_text(whole=False), self.source(), replaces=True)}
        for key in OPTION_FIELDS:
            if key in self.fields:
                found[key] = Setting(self.fields[key], self.source(key))
        return found

    def source(self, key: str | None = None) -> str:
        """``profile NAME (PATH:LINE)`` of ``key``, or of the table's header."""
        return f"profile {self.name} ({self.origin if key is None else self.where[key]})"


def read_profiles(file: ConfigFile) -> dict[str, Profile]:
    """Every ``[models.NAME]`` table of ``file``, checked: one line naming the file and line
    for an unknown field, a wrong type or a key."""
    tables = file.data.get("models", {})
    if not isinstance(tables, dict):
        raise ConfigError(f"{file.where((), 'models')}: 'models' must hold [models.NAME] tables")
    profiles = {}
    for name, table in tables.items():
        here = ("models", name)
        if not isinstance(table, dict):
            raise ConfigError(f"{file.where(('models',), name)}: models.{name} must be a table")
        if not _NAME.match(name) or name in ("sim", "oracle") or ":" in name:
            raise ConfigError(
                f"{file.where(here)}: profile name {name!r} must be letters, digits, '.', '_' "
                "or '-', and not sim or oracle (name the model with model = \"sim\")"
            )
        for key, value in table.items():
            where = file.where(here, key)
            if key.lower() in SECRET_FIELDS:
                raise ConfigError(
                    f"{where}: models.{name}.{key} would hold a key; keys never go in a file: "
                    f'export it and name the variable, e.g. key_env = "MY_API_KEY"'
                )
            check = PROFILE_FIELDS.get(key)
            if check is None:
                raise ConfigError(
                    f"{where}: models.{name} has no field {key!r}{did_you_mean(key, PROFILE_FIELDS)}; "
                    "its fields: " + ", ".join(PROFILE_FIELDS)
                )
            wanted = check(value)
            if wanted is not None:
                # A misplaced key must not reach the message: such values are not echoed.
                got = (
                    f"{value!r}" if key not in QUIET else f"a value of {len(str(value))} characters"
                )
                raise ConfigError(f"{where}: models.{name}.{key} must be {wanted}; got {got}")
        if "knobs" in table and table.get("model") != "sim":
            raise ConfigError(
                f"{file.where(here, 'knobs')}: models.{name}.knobs are the sim's: set "
                'model = "sim", or drop knobs'
            )
        lines = {key: file.where(here, key) for key in table}
        profiles[name] = Profile(name, dict(table), lines, file.where(here))
    return profiles
