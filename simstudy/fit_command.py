"""``numericjev fit-sim``: its arguments, and the fit printed as a table or JSON."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import orjson

from harness.backends.sim import SimParams
from harness.backends.sim.params import RATES
from harness.commands.common import OneLineParser
from runfolder.finding import resolve_run
from simstudy.fitsim import fit_run
from simstudy.fitting import Fit
from simstudy.refits import REFITS, TOLERANCE, WEAK, Agreement
from simstudy.tables import side_by_side

EXIT = "exit status: 0 done; 2 bad input (one line on stderr)."


def fit_parser() -> argparse.ArgumentParser:
    """The arguments of ``numericjev fit-sim`` (its --help)."""
    p = OneLineParser(
        prog="numericjev fit-sim",
        description=(
            "Fit the built-in sim's knobs to a run's logs (any model's, a real one's above "
            "all), print them as a model spec (sim:k=v,...), and show the fitted sim's "
            "figures beside the run's. The fit replays the run's suite against the sim in "
            "process (seconds per try for the affine suite) and searches one knob at a time, "
            "with a pattern move of every moved knob at once after each pass, for the "
            "smallest mean squared log-ratio over MAPE, NMAE, ordering and affine gaps (and "
            "MAPE per domain). It then says per knob what the run knows of it: it refits "
            "--refits more targets drawn like the run (a sim run's knobs at other seeds; "
            "else a bootstrap of the run's families) and prints 'identified' when every fit "
            f"lies within {TOLERANCE:.0%} of their median (the interval is their range), "
            f"'weakly identified' within a factor {WEAK:g}, else 'not identified' (the refits "
            "disagree, or no fit moved the knob from its start), whatever the knob's pull on "
            "the distance; ', flat' is added where its x0.7 and x1.43 barely move the distance "
            "(little information: a bias the refits cannot show is likelier), and two knobs "
            "that move it but make up for each other are printed 'trades off with X' (moved at "
            "once in opposite directions, each by a step that alone raises the distance alike, "
            "they fall short of the sum of the two moves' own rises by more than half of it; "
            "the interval then spans the "
            "valley). Each refit costs as much as the fit. The fitted sim is SIMULATED: "
            "use it to plan (numericjev power), never as a measurement."
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
        "--start",
        default="sim",
        help="the sim spec (or a sim profile's NAME from numericjev.toml) to start from "
        "(default: sim's defaults)",
    )
    p.add_argument(
        "--refits",
        type=int,
        default=REFITS,
        help=f"targets drawn like the run and fitted again to judge each knob (default "
        f"{REFITS}; 0: no judgement, the fit alone)",
    )
    p.add_argument("--json", action="store_true", help="print JSON (spec, knobs, both profiles)")
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    p.epilog = EXIT
    return p


def sim_params(spec: str) -> SimParams:
    """The knobs of a ``sim[:k=v,...]`` spec or of a ``numericjev.toml`` profile's (one with
    ``model = "sim"``), as ``--model NAME`` reads a profile everywhere (ConfigError else)."""
    from harness.backends import parse_model
    from harness.config import load_settings
    from harness.errors import ConfigError

    profile = load_settings().profile(spec)
    model = parse_model(spec if profile is None else profile.spec_text())
    if model.name != "sim":
        what = f"profile {spec!r} ({profile.origin}) is not a sim's" if profile else f"{spec!r}"
        raise ConfigError(
            f"{what} is not a sim spec; give sim, sim:KNOB=VALUE,... or the name of a "
            'profile with model = "sim"'
        )
    return SimParams.parse(model.sim)


def fit_command(args: argparse.Namespace) -> int:
    """Run ``numericjev fit-sim`` on parsed ``args``; bad input raises ConfigError."""
    from harness.errors import ConfigError

    knobs = [k.strip() for k in args.knobs.split(",") if k.strip()]
    if args.rounds < 1 or args.seeds < 1:
        raise ConfigError("--rounds and --seeds must be at least 1")
    if args.refits < 0 or args.refits == 1:
        raise ConfigError("--refits must be 0 (no judgement) or at least 2")
    start = sim_params(args.start)  # a bad spec is refused before the run is looked for
    run_dir = Path(resolve_run(args.run))
    started = time.monotonic()

    fits = 1 + args.refits

    def progress(i: int, f: Fit) -> None:
        if not args.quiet:
            which = "the run" if i == 0 else "a redraw of the run"
            print(
                f"fit-sim: fit {i + 1} of {fits} ({which}): {f.evaluations} tries, "
                f"{time.monotonic() - started:.0f}s, distance {f.distance:.4f}",
                file=sys.stderr,
            )

    result = fit_run(
        run_dir,
        knobs,
        rounds=args.rounds,
        seeds=args.seeds,
        start=start,
        progress=progress,
        refits=args.refits,
    )
    if args.json:
        out = {
            "spec": result.spec,
            "knobs": result.fit.knobs,
            "distance": result.fit.distance,
            "evaluations": result.fit.evaluations,
            "run": result.run_profile,
            "fitted_sim": result.sim_profile,
            "simulations": result.simulations,
            "identification": {i.knob: i.as_json() for i in result.identification},
            "simulated": True,
        }
        sys.stdout.write(orjson.dumps(out, option=orjson.OPT_INDENT_2).decode() + "\n")
        return 0
    print(f"# fit-sim {run_dir.name} (suite {result.suite})\n")
    print(f"fitted spec: {result.spec}")
    print(
        f"distance {result.fit.distance:.4f} (mean squared log-ratio); {result.simulations} "
        f"simulated runs in {time.monotonic() - started:.0f}s\n"
    )
    print(knob_table(result.identification))
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


def knob_table(known: Sequence[Agreement]) -> str:
    """What the run knows of each knob, as a Markdown table with how to read it."""
    if not known:
        return "(--refits 0: no knob judged; the fitted values are not measurements)\n"
    lines = [
        "| knob | fitted | fits (the run and its redraws) | distance x0.7 | distance x1.43 | the run |",
        "| :-- | --: | --: | --: | --: | :-- |",
    ]
    for i in known:
        p = i.profile
        lines.append(
            f"| {i.knob} | {i.value:.3g} | {i.low:.3g}-{i.high:.3g} | {p.down:+.0%} | "
            f"{p.up:+.0%} | {i.verdict} ({i.why}) |"
        )
    bar = max(i.profile.bar for i in known)
    lines.append(
        f"\nA knob is 'identified' when the fit to the run and {len(known[0].refits)} fits to "
        f"targets drawn like it all lie within {TOLERANCE:.0%} of their median (its "
        f"interval is their range), 'weakly identified' within a factor {WEAK:g}, and "
        "'not identified' when the fits disagree beyond that (or none moved it from its "
        "start), whatever its pull on the distance. ', flat': moving it alone by x0.7 or "
        f"x1.43 raises the distance by less than {bar:.0%}, so the run carries little "
        "information on it and its agreement is the refits' alone. 'trades off with X': "
        "it moves the distance, but X makes up for it (the two moved at once in opposite "
        "directions fall short of the sum of the two moves' own rises by more than half of "
        "it); "
        "its interval then spans that valley too. An identified value (flat or not) is what "
        "every draw like the run asks the fit for, to within its interval; refits show the "
        "fit's spread over draws, not its bias, and a flat knob is where a bias is likeliest "
        "(docs/models.md).\n"
    )
    return "\n".join(lines)
