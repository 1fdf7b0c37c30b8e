"""``numericjev config``: the settings in effect, and where each came from."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from harness.commands.common import READING, exit_codes
from harness.errors import ConfigError

if TYPE_CHECKING:
    from harness.config import Settings

EXAMPLE = """\
example numericjev.toml (the working folder's; the user's is
$XDG_CONFIG_HOME/numericjev/numericjev.toml, else ~/.config/numericjev/numericjev.toml):

  [defaults]              # any command's options, by their long names
  concurrency = 16
  suite = "affine"

  [models.jev-local]      # --model jev-local, --models jev-local,gpt-mini
  model = "jev-sim"       # the served model's name (default: the profile's name)
  base_url = "http://127.0.0.1:8377"
  price_per_million = 0.042

  [models.gpt-mini]
  model = "gpt-4o-mini"
  wire = "openai-chat"
  key_env = "OPENAI_API_KEY"   # the variable's NAME; a key in the file is refused
  price_per_million = 0.15
  price_per_million_output = 0.6
  concurrency = 8

  [models.noisy-sim]
  model = "sim"
  knobs = {confusion = 0.3, seed = 7}
"""


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``config`` parser."""
    parser = sub.add_parser(
        "config",
        help="print the settings in effect (numericjev.toml profiles, [defaults]) and their sources",
        description=(
            "Print the settings files read, every model profile as the model spec it resolves "
            "to, and [defaults]; with a command and its options (numericjev config run --model "
            "NAME --concurrency 4), every option of that command as it would run, and where "
            "each value came from: the command line, a profile, a file's line, or the default."
        ),
        epilog=EXAMPLE + "\n" + exit_codes(*READING),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "rest",
        nargs=argparse.REMAINDER,
        metavar="COMMAND [OPTIONS]",
        help="a command and its options, e.g. run --model jev-local",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Print the files, profiles and defaults; or one command's effective options."""
    settings: Settings = args.settings
    if args.rest:
        return _effective(args, settings)
    for line in overview(settings):
        print(line)
    return 0


def overview(settings: Settings) -> list[str]:
    """The files looked at, every profile as its spec, and ``[defaults]``, with sources."""
    from harness.config.profiles import RUN_FIELDS

    read = {file.path for file in settings.files}
    lines = ["settings files (farthest first; the nearer wins, the command line wins over both):"]
    lines += [f"  {path}  ({'read' if path in read else 'none'})" for path in settings.looked]
    lines.append(
        "profiles (--model NAME, --models A,B):" if settings.profiles else "profiles: none"
    )
    for name, profile in sorted(settings.profiles.items()):
        lines.append(f"  {name} = {profile.spec_text()}  ({profile.origin})")
        for key, value in profile.fields.items():
            if key in RUN_FIELDS:
                lines.append(f"      {key} = {value}  ({profile.where[key]})")
    lines.append("[defaults]:" if settings.defaults else "[defaults]: none")
    for dest, setting in sorted(settings.defaults.items()):
        lines.append(f"  {dest} = {setting.value!r}  ({setting.source})")
    return lines


def _effective(args: argparse.Namespace, settings: Settings) -> int:
    """Parse ``args.rest`` as that command would be, and print each option and its source."""
    from harness.config.settings import COMMAND_LINE, command_parsers, resolve

    # The analysis and simstudy commands are handed over whole: no settings apply to them.
    commands = {n: p for n, p in command_parsers(args.root_parser).items() if p.add_help}
    name = args.rest[0]
    if name not in commands or name == "config":
        raise ConfigError(
            f"config takes a command and its options, e.g. config run --model NAME; "
            f"got {name!r} (commands: {', '.join(c for c in commands if c != 'config')})"
        )
    inner = resolve(args.root_parser, args.rest, settings)
    print(f"numericjev {' '.join(args.rest)}: the settings it would run with")
    for dest, value in sorted(vars(inner).items()):
        if dest in ("func", "command", "settings", "sources", "given"):
            continue
        print(f"  {dest} = {value!r}  ({inner.sources.get(dest, COMMAND_LINE)})", file=sys.stdout)
    return 0
