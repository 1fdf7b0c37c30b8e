"""The ``numericjev`` command line: argument parsing and error translation only.

Every failure the user can fix ends as ONE line on stderr and exit status 2; nothing
already recorded is touched on the way out.
"""

from __future__ import annotations

import argparse
import importlib
import signal
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from types import FrameType

from harness.commands import COMMANDS
from harness.commands.common import Handoff, OneLineParser
from harness.config import resolve
from harness.errors import NumericJevError, RunFolderError

# Delegated whole to analysis.cli, which must not import harness (the run folder is the contract).
ANALYSIS_COMMANDS = ("analyze", "report", "diff", "export")
# Delegated whole to the package a ``numericjev.commands`` entry point names (simstudy, which
# stands on both harness and analysis): found by name, never imported, as suites are.
SIMSTUDY_COMMANDS = {
    "fit-sim": "fit the sim's knobs to a run, beside it (numericjev fit-sim --help)",
    "sim-vs-paper": "the sim's figures beside the paper's (numericjev sim-vs-paper --help)",
    "power": "families needed to detect a difference, simulated (numericjev power --help)",
}


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser."""
    parser = OneLineParser(
        prog="numericjev",
        description=(
            "Numerical read-outs of decision models (NumericJev). Run a suite against a model "
            "(sim, oracle, or any /v1/systemone server), resume it, check the decoders against "
            "an exact oracle, and analyse run folders."
        ),
        epilog=(
            "analysis: numericjev analyze RUN | report RUN | diff A B  (each has --help). "
            "RUN may be 'latest', the run started last under runs/. Exit status: 0 done; 1 "
            "stopped by a cap or jobs left unfinished; 2 bad input or refused; 130 "
            "interrupted (each command's --help says which apply)."
        ),
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"harness.commands.{name}").register(sub)
    for name in ANALYSIS_COMMANDS:
        sub.add_parser(name, help=f"{name} run folders (numericjev {name} --help)", add_help=False)
    for name, text in SIMSTUDY_COMMANDS.items():
        sub.add_parser(name, help=text, add_help=False)
    return parser


class Terminated(BaseException):
    """SIGTERM outside a session's own handling (e.g. while a resume reads a large log)."""


def _terminate(signum: int, frame: FrameType | None) -> None:
    raise Terminated


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in ANALYSIS_COMMANDS:
        from analysis.cli import main as analysis_main

        return analysis_main(argv)
    if argv and argv[0] in SIMSTUDY_COMMANDS:  # through a ``numericjev.commands`` entry point
        from importlib.metadata import entry_points

        found = entry_points(group="numericjev.commands", name=argv[0])
        if not found:
            print(
                f"numericjev {argv[0]}: error: no package provides it; reinstall numericjev "
                "(pip install -e .) so that its entry points are registered",
                file=sys.stderr,
            )
            return 2
        plugin: Callable[[list[str]], int] = next(iter(found)).load()
        return plugin(argv)
    parser = build_parser()
    try:  # the command line over numericjev.toml's profiles and [defaults], over the environment
        args = resolve(parser, argv)
    except NumericJevError as exc:
        print(f"numericjev {argv[0]}: error: {exc}", file=sys.stderr)
        return 2
    args.root_parser = parser  # for ``numericjev config``
    with _terminable(args.command in ("run", "resume", "compare")):
        return _dispatch(args)


@contextmanager
def _terminable(wanted: bool) -> Iterator[None]:
    """SIGTERM raises ``Terminated`` while a command that sends requests is outside a
    session's own handling (which drains first), so it too ends in one line (exit 143);
    the previous handler is restored afterwards."""
    previous = signal.getsignal(signal.SIGTERM)
    installed = False
    if wanted and previous is signal.SIG_DFL:
        with suppress(ValueError):  # not the main thread (tests drive the CLI from threads)
            signal.signal(signal.SIGTERM, _terminate)
            installed = True
    try:
        yield
    finally:
        if installed:
            signal.signal(signal.SIGTERM, previous)


def _dispatch(args: argparse.Namespace) -> int:
    """Run the command; every failure the user can fix becomes one line and exit status 2."""
    try:
        result = args.func(args)
        if isinstance(result, Handoff):  # a comparison's runs are done: analysis summarises
            from analysis.cli import summarise_comparison

            status = summarise_comparison(
                result.comparison,
                command=args.command,
                as_json=bool(getattr(args, "json", False)),
                strict=bool(getattr(args, "strict", False)),
            )
            return status or result.status
        return int(result)
    except (NumericJevError, RunFolderError) as exc:  # RunFolderError: see harness.errors
        print(f"numericjev {args.command}: error: {exc}", file=sys.stderr)
        return getattr(exc, "exit_status", 2)  # WriteFailed: 4
    except BrokenPipeError:
        # Output piped into `head` and the like: stop quietly, as Unix tools do.
        sys.stderr.close()
        return 0
    except (KeyboardInterrupt, Terminated) as exc:
        name, status = ("SIGTERM", 143) if isinstance(exc, Terminated) else ("SIGINT", 130)
        folder = getattr(args, "interrupt_folder", None)
        where = (
            f"; continue with: numericjev resume {folder}"
            if folder is not None
            else " before a run folder was made: nothing was recorded, nothing to resume"
            if args.command in ("run", "compare")
            else ""
        )
        print(f"numericjev {args.command}: interrupted by {name}{where}", file=sys.stderr)
        return status


if __name__ == "__main__":
    sys.exit(main())
