"""The sim-study commands: ``fit-sim`` and ``sim-vs-paper`` (``numericjev`` hands them here)."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence

import orjson

from analysis.rendering.sim_caveats import SIM_CAVEATS
from analysis.statistics.family_test import TEST_NAMES
from harness.backends.sim import SimParams
from harness.commands.common import OneLineParser
from harness.errors import NumericJevError, RunFolderError
from runfolder.verdict_option import add_test_option
from simstudy.fit_command import EXIT, fit_command, fit_parser, sim_params
from simstudy.paper import affine_profile, exploratory_profile
from simstudy.tables import side_by_side
from simstudy.vs_paper import EXPLORATORY_SEEDS, HEADLINE, sim_profiles


def _paper_parser() -> argparse.ArgumentParser:
    p = OneLineParser(
        prog="numericjev sim-vs-paper",
        description=(
            "Run the affine and exploratory suites against the sim in process (seconds) and "
            "print its figures beside the paper's published ones. Without --seeds or --beams: "
            "the affine suite's headline figures (--all: every figure) at one seed (the spec's; "
            "0 unless it sets one), so with no spread and no interval (it says so and points to "
            "--seeds), a line each on what the sim has built in and what it overstates, and the "
            "exploratory suite's MAPE as the mean of 12 seeds. The sim's column is SIMULATED; "
            "the paper's is the paper's."
        ),
    )
    p.add_argument(
        "--model",
        default="sim",
        help="a sim spec, or a sim profile's NAME from numericjev.toml (default: sim, its "
        "defaults)",
    )
    p.add_argument("--all", action="store_true", help="every figure, not only the headline")
    p.add_argument(
        "--seeds",
        type=int,
        default=0,
        metavar="N",
        help="check the sim's claims over seeds 0..N-1 instead: each leg of the sign pattern "
        "and each of the paper's findings with the share of seeds it holds at (legs built "
        "into the sim marked so), each tree's MAPE against direct choice and each pair of "
        "neighbouring trees with the seeds whose paired 95%% interval is below, above or "
        "holding 0, each cell's mean, s.d., range and share of seeds within 25%% of the "
        "paper (about 3 s a seed on a 2-core machine; docs/models.md quotes N=24 and N=48)",
    )
    p.add_argument(
        "--beams",
        type=int,
        default=0,
        metavar="N",
        help="instead: the width-4 beams against their greedy trees over seeds 0..N-1, at "
        "equal requests (the greedy tree as it runs) and at equal questions (the greedy tree "
        "asked each job R times, its median read-out, R the beam's questions over the tree's "
        "rounded down and up: equal questions lie between): per tree and comparison the mean "
        "MAPE difference with a 95%% t interval "
        "over seeds, the seeds whose paired 95%% interval is below, above or holding 0, and "
        "the questions each side asks (set off_range in --model: it decides the sign)",
    )
    p.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an affine suite parameter for --seeds and --beams (e.g. per_operator=4: a quarter of the "
        "families, faster and noisier; the paper's figures are for the whole suite)",
    )
    p.epilog = EXIT
    return p


def _power_parser() -> argparse.ArgumentParser:
    p = OneLineParser(
        prog="numericjev power",
        description=(
            "How many families a suite needs to tell two models apart, before anyone pays: "
            "the sim (a spec, e.g. one fitted to a real run with fit-sim) against the same "
            "spec with one knob changed, in simulated replicate comparisons judged exactly "
            "as `numericjev compare` judges (the verdict test's paired p-values over "
            "families, --test as compare's, Holm-corrected over the suite's decoder x "
            "condition cells, alpha 0.05). Power: the share of "
            "replicates whose verdict on the focus cell has the sign of the true difference. "
            "The A/A row (the spec against itself at other seeds) gives the share of "
            "replicates calling any cell: the false-positive rate. Every figure is SIMULATED."
        ),
    )
    p.add_argument(
        "--model",
        default="sim",
        help="the baseline sim spec, or a sim profile's NAME from numericjev.toml (default: sim)",
    )
    p.add_argument("--suite", default="affine", help="the suite (default affine)")
    p.add_argument(
        "--vary",
        action="append",
        required=True,
        metavar="KNOB=V1,V2,...",
        help="the alternatives: the baseline with KNOB at each value (repeatable)",
    )
    p.add_argument(
        "--families", default="16,32,64,128", help="family counts to try (default 16,32,64,128)"
    )
    p.add_argument(
        "--metric",
        choices=("mape", "nmae", "within5"),
        default="mape",
        help="the metric compared, as compare's --metric (default mape)",
    )
    p.add_argument("--decoder", default=None, help="the focus cell's decoder (default tree10)")
    p.add_argument(
        "--condition", default="arithmetic", help="the focus cell's condition (default arithmetic)"
    )
    p.add_argument("--replicates", type=int, default=100, help="comparisons per cell (default 100)")
    add_test_option(p)
    p.add_argument(
        "--param", action="append", default=[], metavar="KEY=VALUE", help="suite parameter"
    )
    p.add_argument("--json", action="store_true", help="print JSON")
    p.epilog = EXIT
    return p


PARSERS = {"fit-sim": fit_parser, "sim-vs-paper": _paper_parser, "power": _power_parser}


def parser(command: str) -> argparse.ArgumentParser:
    """The argument parser of one sim-study command (its --help)."""
    return PARSERS[command]()


def main(argv: Sequence[str]) -> int:
    """Run one sim-study command; bad input is one line on stderr and exit 2."""
    command, rest = argv[0], list(argv[1:])
    args = parser(command).parse_args(rest)
    try:
        if command == "fit-sim":
            return fit_command(args)
        if command == "power":
            return _power(args)
        return _vs_paper(args)
    except (NumericJevError, RunFolderError) as exc:
        print(f"numericjev {command}: error: {exc}", file=sys.stderr)
        return 2


def _vs_paper(args: argparse.Namespace) -> int:
    params = sim_params(args.model)
    if args.beams:
        return _beams(params, args.beams, dict(p.partition("=")[::2] for p in args.param))
    if args.seeds:
        return _sweep(params, args.seeds, dict(p.partition("=")[::2] for p in args.param))
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
        f"\nOne seed ({params.seed}): no spread and no interval. "
        "`numericjev sim-vs-paper --seeds 24` gives each figure's mean, s.d. and range over "
        "seeds and each claim's share of seeds.\n"
    )
    print("\n".join(f"- {line}" for line in SIM_CAVEATS))
    print(
        f"\n## Exploratory suite (MAPE, arithmetic; the sim: mean of {EXPLORATORY_SEEDS} seeds, "
        "as its 12 questions make one seed one small draw)\n"
    )
    print("\n".join(side_by_side([(label, exploratory), ("paper", paper_e)], list(paper_e))))
    return 0


def _sweep(params: SimParams, n: int, affine: dict[str, str]) -> int:
    from harness.errors import ConfigError
    from simstudy.sweep import SeedFigures, sweep, sweep_tables

    if n < 2:
        raise ConfigError(f"--seeds takes 2 or more seeds (a spread needs two); got {n}")
    started = time.monotonic()

    def progress(figures: SeedFigures) -> None:
        took = time.monotonic() - started
        print(f"sim-vs-paper: seed {figures.seed} done, {took:.0f}s", file=sys.stderr)

    runs = sweep(params, range(n), affine, progress=progress)
    print(f"# {params.label()} beside the paper over seeds 0-{n - 1}\n")
    print(
        "> **SIMULATED MODEL — every sim figure describes the built-in simulator, not a real "
        "model.** The paper's column is the paper's.\n"
    )
    print("\n".join(sweep_tables(runs)))
    return 0


def _beams(params: SimParams, n: int, affine: dict[str, str]) -> int:
    from harness.errors import ConfigError
    from simstudy.beams import beam_sweep, beams_table

    if n < 2:
        raise ConfigError(f"--beams takes 2 or more seeds (a spread needs two); got {n}")
    runs = beam_sweep(params, range(n), affine)
    print(f"# {params.label()}: beams against greedy over seeds 0-{n - 1}\n")
    print("> **SIMULATED MODEL — every figure describes the built-in simulator.**\n")
    print("\n".join(beams_table(runs, params.off_range)))
    return 0


def _power(args: argparse.Namespace) -> int:
    from harness.errors import ConfigError
    from harness.protocol.registry import load_suite
    from simstudy.intervals import share_interval
    from simstudy.power import pool, power_table
    from simstudy.simulate import with_knobs

    base = sim_params(args.model)
    try:
        families = sorted({int(x) for x in args.families.split(",") if x.strip()})
    except ValueError as exc:
        raise ConfigError(
            f"--families takes whole numbers like 16,32,64; got {args.families!r}"
        ) from exc
    if not families or families[0] < 2 or args.replicates < 1:
        raise ConfigError("--families must be 2 or more, --replicates at least 1")
    arms = []
    for text in args.vary:
        knob, _, values = text.partition("=")
        if not values:
            raise ConfigError(f"--vary takes KNOB=V1,V2,...; got {text!r}")
        for value in values.split(","):  # a malformed knob is SimParams.parse's one line
            arms.append((f"{knob}={value}", with_knobs(base, {knob: value.strip()})))
    params = dict(p.partition("=")[::2] for p in args.param)
    suite = load_suite(args.suite, params=params)
    decoder = args.decoder or ("tree10" if "tree10" in suite.decoders else suite.decoders[0])
    if decoder not in suite.decoders:
        raise ConfigError(f"--decoder {decoder!r} is not one of {', '.join(suite.decoders)}")
    per_seed = len({case.family for case in suite.cases})
    seeds = max(2, -(-4 * max(families) // per_seed))  # 4x the largest n: draws differ
    started = time.monotonic()
    base_pool = pool(suite, base, [1000 + i for i in range(seeds)], args.metric)
    if args.condition not in base_pool.conditions:
        raise ConfigError(
            f"--condition {args.condition!r} is not one of {', '.join(base_pool.conditions)}"
        )
    pools = [
        ("A/A: " + base.label(), pool(suite, base, [3000 + i for i in range(seeds)], args.metric))
    ]
    for label, params_ in arms:
        pools.append((label, pool(suite, params_, [2000 + i for i in range(seeds)], args.metric)))
    rows = power_table(
        base_pool,
        pools,
        (decoder, args.condition),
        families,
        args.replicates,
        args.metric,
        method=args.test,
    )
    took = time.monotonic() - started
    if args.json:
        out = {
            "simulated": True,
            "baseline": base.label(),
            "suite": args.suite,
            "metric": args.metric,
            "test": args.test,
            "focus": [decoder, args.condition],
            "units_per_arm": int(base_pool.sums.shape[0]),
            "replicates": args.replicates,
            "seconds": round(took, 1),
            "rows": [
                {
                    "alternative": r.label,
                    "effect": r.effect,
                    "power": r.power,
                    "any_cell": r.any_cell,
                    "power_interval": {
                        n: share_interval(round(p * args.replicates), args.replicates)
                        for n, p in r.power.items()
                    },
                    "any_cell_interval": {
                        n: share_interval(round(p * args.replicates), args.replicates)
                        for n, p in r.any_cell.items()
                    },
                }
                for r in rows
            ],
        }
        options = orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY
        sys.stdout.write(orjson.dumps(out, option=options).decode() + "\n")
        return 0
    unit = args.metric.upper()
    print(f"# power: {base.label()} against one knob changed, suite {args.suite} (SIMULATED)\n")
    print(
        f"Focus cell: {decoder} x {args.condition}, {unit}. {args.replicates} simulated comparisons "
        f"per cell, each judged as compare judges ({TEST_NAMES[args.test]}, --test "
        f"{args.test}, Holm over the suite's cells, alpha 0.05), drawn from {base_pool.sums.shape[0]} family units per arm "
        f"({seeds} sim seeds); {took:.0f}s.\n"
    )
    head = ["Alternative (SIMULATED)", f"Δ{unit} (pp)", *(f"power n={n}" for n in families)]
    lines = [
        "| " + " | ".join(head) + " |",
        "| :-- | --: | " + " | ".join("--:" for _ in families) + " |",
    ]

    def share(p: float) -> str:
        lo, hi = share_interval(round(p * args.replicates), args.replicates)
        return f"{p:.2f} [{lo:.2f}, {hi:.2f}]"

    for r in rows:
        if r.label.startswith("A/A"):
            cells = [f"{share(r.any_cell[n])} any cell" for n in families]
        else:
            cells = [share(r.power[n]) for n in families]
        lines.append(f"| {r.label} | {r.effect:+.2f} | " + " | ".join(cells) + " |")
    print("\n".join(lines))
    print(
        "\nPower: share of comparisons calling the focus cell in the direction of the true "
        "difference (Δ, over every unit of both pools: the value the draws estimate, so it "
        "has no interval). A/A: share calling any cell at all, "
        "the family-wise false-positive rate (Holm keeps it at or below 0.05 in expectation). "
        f"Brackets: exact 95% (Clopper-Pearson) intervals of a share of {args.replicates} "
        "comparisons: a share is itself a draw (5 of 100 is 0.016-0.113)."
    )
    return 0
