"""Where the command line, the settings files and the environment meet: ``resolve``, once.

A first pass parses the command line with every default suppressed, so argparse says which
options it gave; the layers under it (docs/usage.md lists them) then become the command's
defaults for a second pass, and ``args.sources`` says where each value came from.
"""

from __future__ import annotations

import argparse
import difflib
import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.cache.lookup import MODE_ENV
from harness.config.files import ConfigFile, Setting, config_paths, did_you_mean, read_config
from harness.config.profiles import RUN_FIELDS, Profile, read_profiles, url_problem
from harness.errors import ConfigError

TOP_LEVEL = ("models", "defaults")
COMMAND_LINE = "command line"
DEFAULT = "default"


@dataclass(frozen=True)
class Settings:
    """The settings files as read: profiles by name and ``[defaults]`` by option (nearer
    files replace farther ones, a whole profile at a time)."""

    files: tuple[ConfigFile, ...] = ()
    looked: tuple[Path, ...] = ()  # every path looked at, farthest first
    profiles: Mapping[str, Profile] = field(default_factory=dict)
    defaults: Mapping[str, Setting] = field(default_factory=dict)

    def profile(self, text: str) -> Profile | None:
        """The profile ``text`` (a ``--model`` value) names, if it names one."""
        return self.profiles.get(text.strip())

    def layers(
        self, command: str, given: Mapping[str, Any], environ: Mapping[str, str]
    ) -> dict[str, Setting]:
        """What lies under the command line for ``command``, by destination, the nearest
        layer's value kept: the environment, ``[defaults]``, then the named profile(s).
        ``given`` is what the command line gave."""
        found: dict[str, Setting] = {}
        # resume continues a run with its recorded settings: [defaults] do not apply, nor the
        # environment's cache mode (the run's own is kept: commands.resume)
        if command != "resume":
            if environ.get(MODE_ENV):
                found["cache"] = Setting(environ[MODE_ENV], f"${MODE_ENV}")
            found |= self.defaults
        model = given.get("model", found["model"].value if "model" in found else None)
        if isinstance(model, str):
            profile = self.profile(model)
            if profile is None:
                self._near_miss(model)
            else:
                found |= profile.settings()
        models = given.get("models", found["models"].value if "models" in found else None)
        if isinstance(models, str):
            found |= self._models(models, frozenset(given))
        return found

    def _models(self, text: str, given: frozenset[str]) -> dict[str, Setting]:
        """``--models`` with each profile name replaced by its spec's text, and each named
        profile's run settings the command line left unset, by that text: a comparison
        applies them to that model's cells (``per_model``)."""
        from harness.backends import split_models

        names = split_models(text)
        for part in names:
            if part not in self.profiles:
                self._near_miss(part)
        named = [self.profiles[part] for part in names if part in self.profiles]
        if not named:
            return {}
        source = "profiles " + ", ".join(f"{p.name} ({p.origin})" for p in named)
        resolved = ",".join(
            self.profiles[part].spec_text(given) if part in self.profiles else part
            for part in names
        )
        per_model = {}
        for profile in named:
            own = {
                key: profile.fields[key]
                for key in RUN_FIELDS
                if key in profile.fields and key not in given
            }
            if own:
                per_model[profile.spec_text(given)] = own
        return {
            "models": Setting(resolved, source, replaces=True),
            "per_model": Setting(per_model, source),
        }

    def _near_miss(self, text: str) -> None:
        """Refuse a model name one typo away from a profile's: it would be sent, as a
        served model's name, to the default server (and billed there) instead of the
        profile's."""
        if ":" in text or text in ("sim", "oracle"):
            return
        close = difflib.get_close_matches(text, list(self.profiles), n=1, cutoff=0.75)
        if close:
            raise ConfigError(
                f"model {text!r} names no profile; did you mean {close[0]!r} "
                f"({self.profiles[close[0]].origin})? (numericjev config lists the profiles)"
            )


def resolve(
    parser: argparse.ArgumentParser,
    argv: Sequence[str],
    settings: Settings | None = None,
    environ: Mapping[str, str] | None = None,
) -> argparse.Namespace:
    """Parse ``argv`` with the layers under the command line as the command's defaults
    (module docstring; ``settings``: read from the files when None). ``args.sources``
    says where each option's value came from, ``args.given`` which options the command
    line gave, and ``args.settings`` holds the files as read."""
    commands = command_parsers(parser)
    with _suppressed(parser, *commands.values()):
        first = vars(parser.parse_args(argv))
    settings = load_settings() if settings is None else settings
    check_defaults(settings, commands)
    command = commands[first["command"]]
    options = _options(command)
    given = {dest: value for dest, value in first.items() if dest in options}
    layers = settings.layers(first["command"], given, os.environ if environ is None else environ)
    defaults = {
        dest: _as_option(options[dest], setting) if dest in options else setting.value
        for dest, setting in layers.items()
        if dest in options or dest == "per_model"
    }
    command.set_defaults(**defaults)
    args = parser.parse_args(argv)
    # A profile's name on the command line stands for its spec.
    named = {dest for dest, setting in layers.items() if setting.replaces and dest in given}
    for dest in named:
        setattr(args, dest, defaults[dest])
    args.given, args.settings = frozenset(given), settings
    args.sources = {
        dest: layers[dest].source
        if dest in defaults and (dest in named or dest not in given)
        else COMMAND_LINE
        if dest in given
        else DEFAULT
        for dest in [*options, *(["per_model"] if "per_model" in defaults else [])]
    }
    return args


@contextmanager
def _suppressed(*parsers: argparse.ArgumentParser) -> Iterator[None]:
    """Every option of ``parsers`` without a default, for the pass that learns what the
    command line gave (an option it does not name is then absent); restored after."""
    kept = {action: action.default for parser in parsers for action in _options(parser).values()}
    for action in kept:
        action.default = argparse.SUPPRESS
    try:
        yield
    finally:
        for action, default in kept.items():
            action.default = default


def _options(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    """The command's options by destination (help and positionals left out): argparse
    keeps them in ``_actions``, read here only."""
    return {
        action.dest: action
        for action in parser._actions
        if action.option_strings and action.dest != "help"
    }


def _as_option(action: argparse.Action, setting: Setting) -> Any:
    """A layer's value as the option's own, checked with the option's own ``type`` and
    ``choices``; a wrong one is one line naming its source."""
    value, flag = setting.value, action.option_strings[-1]
    if action.nargs == 0:  # a flag (store_true, store_false)
        if not isinstance(value, bool):
            raise ConfigError(f"{setting.source}: {flag} takes true or false; got {value!r}")
        return value if action.const is True else not value
    if isinstance(action.default, list):  # a repeatable option
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{setting.source}: {flag} takes a list of strings; got {value!r}")
        return [_converted(action, v, setting) for v in value]
    return _converted(action, value, setting)


def _converted(action: argparse.Action, value: Any, setting: Setting) -> Any:
    flag, kind = action.option_strings[-1], action.type
    if kind is int and (isinstance(value, bool) or not isinstance(value, int)):
        raise ConfigError(f"{setting.source}: {flag} takes a whole number; got {value!r}")
    if kind is float and (isinstance(value, bool) or not isinstance(value, int | float)):
        raise ConfigError(f"{setting.source}: {flag} takes a number; got {value!r}")
    if kind not in (int, float) and not isinstance(value, str | int):
        raise ConfigError(f"{setting.source}: {flag} takes a string; got {value!r}")
    converted: Any = float(value) if kind is float else value if kind is int else str(value)
    try:  # the option's own type, as argparse would apply it to the command line's text
        converted = kind(converted) if callable(kind) and kind not in (int, float) else converted
    except (argparse.ArgumentTypeError, TypeError, ValueError) as exc:
        raise ConfigError(f"{setting.source}: {flag}: {exc}") from None
    if action.choices is not None and converted not in action.choices:
        choices = ", ".join(map(str, action.choices))
        raise ConfigError(f"{setting.source}: {flag} takes one of {choices}; got {value!r}")
    return converted


def load_settings(cwd: Path | None = None, environ: Mapping[str, str] | None = None) -> Settings:
    """Read the user's file and the working folder's (either may be absent), checked."""
    looked = config_paths(cwd, environ)
    files = tuple(f for f in (read_config(path) for path in looked) if f is not None)
    profiles: dict[str, Profile] = {}
    defaults: dict[str, Setting] = {}
    for file in files:  # farthest first: the nearer file replaces
        for key in file.data:
            if key not in TOP_LEVEL:
                raise ConfigError(
                    f"{file.where((), key)}: unknown table or key {key!r}"
                    f"{did_you_mean(key, TOP_LEVEL)}; a settings file holds [models.NAME] "
                    "tables and [defaults]"
                )
        profiles.update(read_profiles(file))
        table = file.data.get("defaults", {})
        if not isinstance(table, dict):
            raise ConfigError(f"{file.where((), 'defaults')}: 'defaults' must be a table")
        for key, value in table.items():
            where = file.where(("defaults",), key)
            if key in ("base_url", "base-url") and (problem := url_problem(value)):
                raise ConfigError(f"{where}: [defaults] base_url must be {problem}")
            defaults[key.replace("-", "_")] = Setting(value, where)
    return Settings(files, looked, profiles, defaults)


def check_defaults(settings: Settings, parsers: Mapping[str, argparse.ArgumentParser]) -> None:
    """Refuse a ``[defaults]`` key that no command takes, naming the file and line."""
    known = {dest for parser in parsers.values() for dest in _options(parser)}
    for dest, setting in settings.defaults.items():
        if dest not in known or dest in ("run", "out", "shard"):
            raise ConfigError(
                f"{setting.source}: [defaults] has no option {dest!r}"
                f"{did_you_mean(dest, known - {'run', 'out', 'shard'})}: it takes the commands' "
                "options by their long names (e.g. concurrency, suite, model, cache, "
                "no_progress); a run folder is named on the command line"
            )


def command_parsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The subcommands' parsers by name."""
    for action in parser._actions:
        if isinstance(action.choices, Mapping):  # the subcommands' action
            return dict(action.choices)
    return {}
