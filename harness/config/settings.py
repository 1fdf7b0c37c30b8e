"""Where the command line, the settings files and the code's defaults meet.

``Settings`` holds what the files say (profiles and ``[defaults]``, each with its
``PATH:LINE``); ``apply`` fills a parsed command's options from them where the command
line gave none, and ``sources`` says, option by option, where each value came from.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.config.files import ConfigFile, config_paths, read_config
from harness.config.profiles import RUN_FIELDS, Profile, read_profiles, url_problem
from harness.errors import ConfigError

TOP_LEVEL = ("models", "defaults")
COMMAND_LINE = "command line"
DEFAULT = "default"


@dataclass(frozen=True)
class Setting:
    """One value a file gives, and the ``PATH:LINE`` it came from."""

    value: Any
    source: str


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

    def resolve_models(self, text: str, given: frozenset[str] = frozenset()) -> str:
        """``--models`` text with each profile name replaced by its spec's text."""
        from harness.backends import split_models

        return ",".join(
            self.profiles[part].spec_text(given) if part in self.profiles else part
            for part in split_models(text)
        )

    def apply(
        self, parser: argparse.ArgumentParser, args: argparse.Namespace, argv: Sequence[str]
    ) -> dict[str, str]:
        """Fill ``args`` (parsed by ``parser``, one command's) from the files where ``argv``
        set nothing: a named profile first, then ``[defaults]``. Returns each option's source
        (``command line``, ``PATH:LINE``, ``profile NAME (PATH:LINE)`` or ``default``)."""
        given = given_options(parser, argv)
        options = _options(parser)
        sources = {dest: COMMAND_LINE if dest in given else DEFAULT for dest in options}
        # resume continues a run with its own recorded settings: [defaults] do not apply.
        defaults = {} if parser.prog.endswith(" resume") else self.defaults
        for dest, setting in defaults.items():
            if dest in options and dest not in given:
                setattr(args, dest, _as_option(options[dest], setting))
                sources[dest] = setting.source
        model = getattr(args, "model", None)
        profile = self.profile(model) if isinstance(model, str) else None
        if isinstance(model, str) and profile is None:
            _near_miss(self, model)
        if profile is not None:
            flags = frozenset(f for dest in given for f in options[dest].option_strings)
            args.model = profile.spec_text(flags)
            sources["model"] = f"profile {profile.name} ({profile.origin})"
            for key, dest in RUN_FIELDS.items():
                if key in profile.fields and dest in options and dest not in given:
                    setattr(args, dest, profile.fields[key])
                    sources[dest] = f"profile {profile.name} ({profile.where[key]})"
        models = getattr(args, "models", None)
        if isinstance(models, str):
            names = _names(models)
            for part in names:
                if part not in self.profiles:
                    _near_miss(self, part)
            named = [part for part in names if part in self.profiles]
            if named:
                flags = frozenset(f for dest in given for f in options[dest].option_strings)
                args.models = self.resolve_models(models, flags)
                args.per_model = self.run_fields(named, flags, given)
                sources["models"] = "profiles " + ", ".join(
                    f"{n} ({self.profiles[n].origin})" for n in named
                )
                sources["per_model"] = sources["models"]  # each model's cells' own settings
        return sources

    def run_fields(
        self, named: Sequence[str], flags: frozenset[str], given: set[str]
    ) -> dict[str, dict[str, Any]]:
        """Each named profile's run settings (concurrency, rps, timeout, max_attempts,
        cache) that the command line left unset, by the spec text it resolves to: a
        comparison applies them to that model's cells."""
        found = {}
        for name in named:
            profile = self.profiles[name]
            own = {
                key: profile.fields[key]
                for key, dest in RUN_FIELDS.items()
                if key in profile.fields and dest not in given
            }
            if own:
                found[profile.spec_text(flags)] = own
        return found


def _near_miss(settings: Settings, text: str) -> None:
    """Refuse a model name one typo away from a profile's: it would be sent, as a served
    model's name, to the default server (and billed there) instead of the profile's."""
    import difflib

    if ":" in text or text in ("sim", "oracle"):
        return
    close = difflib.get_close_matches(text, list(settings.profiles), n=1, cutoff=0.75)
    if close:
        raise ConfigError(
            f"model {text!r} names no profile; did you mean {close[0]!r} "
            f"({settings.profiles[close[0]].origin})? (numericjev config lists the profiles)"
        )


def _names(models: str) -> list[str]:
    from harness.backends import split_models

    return split_models(models)


def _options(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    """The command's options by destination (help and positionals left out)."""
    return {
        action.dest: action
        for action in parser._actions
        if action.option_strings and not isinstance(action, argparse._HelpAction)
    }


def given_options(parser: argparse.ArgumentParser, argv: Sequence[str]) -> set[str]:
    """The destinations of the options ``argv`` names (``--opt``, ``--opt=V``, or an
    unambiguous prefix, as argparse reads them)."""
    by_flag = {flag: a.dest for a in _options(parser).values() for flag in a.option_strings}
    given = set()
    for word in argv:
        if word == "--":
            break
        if not word.startswith("-"):
            continue
        flag = word.split("=", 1)[0]
        if flag in by_flag:
            given.add(by_flag[flag])
        elif flag.startswith("--"):
            matches = {dest for f, dest in by_flag.items() if f.startswith(flag)}
            given |= matches if len(matches) == 1 else set()
    return given


def _as_option(action: argparse.Action, setting: Setting) -> Any:
    """A ``[defaults]`` value as the option's own value, checked as the option checks it."""
    value = setting.value
    flag = action.option_strings[-1]
    if isinstance(action, argparse._StoreTrueAction | argparse._StoreFalseAction):
        if not isinstance(value, bool):
            raise ConfigError(f"{setting.source}: {flag} takes true or false; got {value!r}")
        return value if isinstance(action, argparse._StoreTrueAction) else not value
    if isinstance(action, argparse._AppendAction):
        items = value if isinstance(value, list) else None
        if items is None or not all(isinstance(v, str) for v in items):
            raise ConfigError(f"{setting.source}: {flag} takes a list of strings; got {value!r}")
        return [_converted(action, v, setting) for v in items]
    return _converted(action, value, setting)


def _converted(action: argparse.Action, value: Any, setting: Setting) -> Any:
    flag = action.option_strings[-1]
    kind = action.type
    if kind is int and (isinstance(value, bool) or not isinstance(value, int)):
        raise ConfigError(f"{setting.source}: {flag} takes a whole number; got {value!r}")
    if kind is float and (isinstance(value, bool) or not isinstance(value, int | float)):
        raise ConfigError(f"{setting.source}: {flag} takes a number; got {value!r}")
    if kind not in (int, float) and not isinstance(value, str | int):
        raise ConfigError(f"{setting.source}: {flag} takes a string; got {value!r}")
    try:
        converted = value if kind in (int, float) else kind(str(value)) if callable(kind) else value
    except (argparse.ArgumentTypeError, TypeError, ValueError) as exc:
        raise ConfigError(f"{setting.source}: {flag}: {exc}") from None
    if kind is float:
        converted = float(value)
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
                    f"{file.where((), key)}: unknown table or key {key!r}; a settings file "
                    "holds [models.NAME] tables and [defaults]"
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
                f"{setting.source}: [defaults] has no option {dest!r}: it takes the commands' "
                "options by their long names (e.g. concurrency, suite, model, cache, "
                "no_progress); a run folder is named on the command line"
            )


def apply_settings(
    parser: argparse.ArgumentParser, args: argparse.Namespace, argv: Sequence[str]
) -> Settings:
    """Read the settings files and fill the parsed command's options from them (the CLI's
    one call); ``args.sources`` keeps where each option's value came from."""
    settings = load_settings()
    args.settings, args.root_parser = settings, parser  # for ``numericjev config``
    if not settings.files:
        args.sources = {}
        return settings
    commands = command_parsers(parser)
    check_defaults(settings, commands)
    args.sources = settings.apply(commands[args.command], args, argv)
    return settings


def command_parsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The subcommands' parsers by name."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}
