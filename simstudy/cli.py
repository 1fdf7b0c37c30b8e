"""The sim-study commands: ``fit-sim`` and ``sim-vs-paper`` (``numericjev`` hands them here)."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

import orjson

from harness.backends.sim import SimParams
from harness.backends.sim.params import RATES
from harness.errors import NumericJevError, RunFolderError
from runfolder.finding import resolve_run
from simstudy.fitsim import fit_run
from simstudy.fitting import Fit
from simstudy.paper import affine_profile, exploratory_profile
from simstudy.tables import side_by_side
from simstudy.vs_paper import EXPLORATORY_SEEDS, HEADLINE, sim_profiles

EXIT = "exit status: 0 done; 2 bad input (one line on stderr)."


class OneLineParser(argparse.ArgumentParser):
    """Usage errors in one line, exit status 2 (as harness.cli's parser)."""

    def error(self, message: str) -> NoReturn:
        """Print ``message`` in one line, pointing at ``--help``, and exit 2."""
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _fit_parser() -> argparse.ArgumentParser:
    p = OneLineParser(
        prog="numericjev fit-sim",
        description=(
            "Fit the built-in sim's knobs to a run's logs (any model's, a real one's above "
            "all), print them as a model spec (sim:k=v,...), and show the fitted sim's "
            "figures beside the run's. The fit replays the run's suite against the sim in "
            "process (about a second per try for the affine suite) and searches one knob at "
            "a time for the smallest mean squared log-ratio over MAPE, NMAE, ordering and "
            "affine gaps (and MAPE per domain). The fitted sim is SIMULATED: use it to plan "
            "(numericjev power), never as a measurement."
        ),
    )
    p.add_argument("run", help="a run folder, or 'latest'")
    p.add_argument(
        "--knobs",
        default=",".join(RATES),
        help=f"comma-separated knobs to fit (default: all rates: {', '.join(RATES)})",
    )
    p.add_argument("--rounds", type=int, default=2, help="passes over the knobs (default 2)")
    p.add_argument(
        "--seeds",
        type=int,
        default=1,
        help="sim seeds averaged per try (default 1; more is steadier, slower)",
    )
    p.add_argument(
        "--start", default="sim", help="the spec to start from (default: sim's defaults)"
    )
    p.add_argument("--json", action="store_true", help="print JSON (spec, knobs, both profiles)")
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    p.epilog = EXIT
    return p


def _paper_parser() -> argparse.ArgumentParser:
    p = OneLineParser(
        prog="numericjev sim-vs-paper",
        description=(
            "Run the affine and exploratory suites against the sim in process (seconds) and "
            "print its figures beside the paper's published ones. The sim's column is "
            "SIMULATED; the paper's is the paper's."
        ),
    )
    p.add_argument("--model", default="sim", help="a sim spec (default: sim, its defaults)")
    p.add_argument("--all", action="store_true", help="every figure, not only the headline")
    p.epilog = EXIT
    return p


PARSERS = {"fit-sim": _fit_parser, "sim-vs-paper": _paper_parser}


def parser(command: str) -> argparse.ArgumentParser:
    """The argument parser of one sim-study command (its --help)."""
    return PARSERS[command]()


def main(argv: Sequence[str]) -> int:
    """Run one sim-study command; bad input is one line on stderr and exit 2."""
    command, rest = argv[0], list(argv[1:])
    args = parser(command).parse_args(rest)
    try:
        if command == "fit-sim":
            return _fit(args)
        return _vs_paper(args)
    except (NumericJevError, RunFolderError) as exc:
        print(f"numericjev {command}: error: {exc}", file=sys.stderr)
        return 2


def _params(spec: str) -> SimParams:
    """A ``sim[:k=v,...]`` spec's knobs (ConfigError for anything else)."""
    from harness.backends import parse_model
    from harness.errors import ConfigError

    model = parse_model(spec)
    if model.name != "sim":
        raise ConfigError(f"{spec!r} is not a sim spec; give sim or sim:KNOB=VALUE,...")
    return SimParams.parse(model.sim)


def _fit(args: argparse.Namespace) -> int:
    from harness.errors import ConfigError

    knobs = [k.strip() for k in args.knobs.split(",") if k.strip()]
    if args.rounds < 1 or args.seeds < 1:
        raise ConfigError("--rounds and --seeds must be at least 1")
    run_dir = Path(resolve_run(args.run))
    started = time.monotonic()

    def progress(f: Fit) -> None:
        if not args.quiet:
            print(
                f"fit-sim: {f.evaluations} sims, {time.monotonic() - started:.0f}s, distance {f.distance:.4f}",
                file=sys.stderr,
            )

    result = fit_run(
        run_dir,
        knobs,
        rounds=args.rounds,
        seeds=args.seeds,
        start=_params(args.start),
        progress=progress,
    )
    if args.json:
        out = {
            "spec": result.spec,
            "knobs": result.fit.knobs,
            "distance": result.fit.distance,
            "evaluations": result.fit.evaluations,
            "run": result.run_profile,
            "fitted_sim": result.sim_profile,
            "simulated": True,
        }
        sys.stdout.write(orjson.dumps(out, option=orjson.OPT_INDENT_2).decode() + "\n")
        return 0
    print(f"# fit-sim {run_dir.name} (suite {result.suite})\n")
    print(f"fitted spec: {result.spec}")
    print(
        f"distance {result.fit.distance:.4f} (mean squared log-ratio) after {result.fit.evaluations} "
        f"simulated runs in {time.monotonic() - started:.0f}s\n"
    )
    print(
        "> **The fitted sim's column is SIMULATED** — a stand-in to plan with, not a measurement.\n"
    )
    print(
        "\n".join(
            side_by_side(
                [("run", result.run_profile), ("fitted sim (SIMULATED)", result.sim_profile)]
            )
        )
    )
    return 0


def _vs_paper(args: argparse.Namespace) -> int:
    params = _params(args.model)
    affine, exploratory = sim_profiles(params)
    paper_a, paper_e = affine_profile(), exploratory_profile()
    label = "sim (SIMULATED)"
    print(f"# {params.label()} beside the paper\n")
    print(
        "> **SIMULATED MODEL — the sim's column describes the built-in simulator, not a real model.**\n"
    )
    keys = HEADLINE if not args.all else list(paper_a)
    print("## Affine suite\n")
    print("\n".join(side_by_side([(label, affine), ("paper", paper_a)], keys)))
    print(
        f"\n## Exploratory suite (MAPE, arithmetic; the sim: mean of {EXPLORATORY_SEEDS} seeds, "
        "as its 12 questions make one seed one small draw)\n"
    )
    print("\n".join(side_by_side([(label, exploratory), ("paper", paper_e)], list(paper_e))))
    return 0
