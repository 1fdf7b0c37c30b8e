"""``numericjev fit-sim``: the sim's knobs fitted to a run, and its table beside the run's."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from analysis.loading.run import load_run
from harness.backends.sim import SimParams
from harness.backends.sim.params import RATES
from harness.errors import ConfigError
from harness.protocol.cases import Suite
from harness.protocol.registry import load_suite
from simstudy.fitting import Fit, distance, fit, identify
from simstudy.profile import Profile, profile_of, profile_of_records
from simstudy.refits import REFITS, Agreement, agreements, jittered, redrawn_targets
from simstudy.simulate import simulate, with_knobs

FIT_SEED = 1000  # the fit's own draws: never the run's seed, so a sim run is not copied
REFIT_SEED = 100  # refit r draws from FIT_SEED + REFIT_SEED * (r + 1): its own sim noise too
PAIRED_UP_TO = 6  # pairs of knobs are profiled for trade-offs when this few are fitted


@dataclass(frozen=True)
class FitResult:
    """A fitted sim: its spec, its profile beside the run's, and how the fit went."""

    spec: str
    params: SimParams
    run_profile: Profile
    sim_profile: Profile
    fit: Fit
    suite: str
    identification: tuple[Agreement, ...] = ()  # per fitted knob (empty: not asked)
    simulations: int = 0  # simulated runs in all: the fit, its profile and the refits


def suite_of_run(run_dir: Path) -> tuple[str, Suite]:
    """The suite a run was made from (name, Suite), rebuilt from its manifest."""
    run = load_run(run_dir)
    raw = run.manifest.raw
    params = {k: str(v) for k, v in (raw.get("suite_params") or {}).items()}
    try:
        suite = load_suite(run.manifest.suite, params=params, decoders=run.manifest.decoders)
    except ConfigError as exc:
        raise ConfigError(f"cannot rebuild the suite of {run_dir}: {exc}") from exc
    return run.manifest.suite, suite


def fit_run(
    run_dir: Path,
    knobs: Sequence[str] = RATES,
    *,
    rounds: int = 2,
    seeds: int = 1,
    start: SimParams | None = None,
    progress: Callable[[int, Fit], None] | None = None,
    refits: int = REFITS,
) -> FitResult:
    """Fit ``knobs`` of the sim to the run at ``run_dir`` (the others stay at ``start``),
    and (``refits`` > 0) say per knob whether the run identifies it: the profile around the
    fit, and ``refits`` more fits to targets drawn like the run (``simstudy.refits``).
    ``progress(i, fit)`` follows each fit: ``i`` 0 for the run's, r for the r-th refit."""
    unknown = [k for k in knobs if k not in RATES]
    if unknown:
        raise ConfigError(
            f"fit-sim fits rates only; not {', '.join(unknown)} (knobs: {', '.join(RATES)})"
        )
    run = load_run(run_dir)
    name, suite = suite_of_run(run_dir)
    target = profile_of(run.outputs, name)
    if not target:
        raise ConfigError(f"{run_dir} has no ok outputs to fit to; run or resume it first")
    base = start or SimParams()
    initial = {k: float(getattr(base, k)) for k in knobs}
    bounds = dict.fromkeys(knobs, (0.0, 1.0))
    counted = [0]

    def scorer(wanted: Profile, first_seed: int) -> Callable[[Mapping[str, float]], list[float]]:
        cache: dict[tuple[tuple[str, float], ...], list[float]] = {}

        def per_seed(values: Mapping[str, float]) -> list[float]:
            key = tuple(sorted(values.items()))
            if key not in cache:
                counted[0] += seeds
                cache[key] = [
                    distance(profile_of_records(simulate(suite, params), name), wanted)
                    for s in range(seeds)
                    for params in (with_knobs(base, {**values, "seed": first_seed + s}),)
                ]
            return cache[key]

        return per_seed

    def fit_to(
        wanted: Profile, first_seed: int, which: int
    ) -> tuple[Fit, Callable[..., float], Callable[[Mapping[str, float]], list[float]]]:
        # A refit starts elsewhere too (``jittered``): refits from one start can agree by
        # stopping near it where the run leaves a knob free (a valley between two knobs).
        per_seed = scorer(wanted, first_seed)
        told = None if progress is None else (lambda f: progress(which, f))

        def evaluate(values: Mapping[str, float]) -> float:
            return statistics.fmean(per_seed(values))

        begin = jittered(initial, bounds, which) if which else initial
        found = fit(evaluate, begin, knobs, bounds=bounds, rounds=rounds, progress=told)
        return found, evaluate, per_seed

    result, evaluate, per_seed = fit_to(target, FIT_SEED, 0)
    known: tuple[Agreement, ...] = ()
    if refits > 0:
        # The distance's spread over the fit's seeds at the fitted knobs: a knob move that
        # changes the distance less is not seen (the profile's bar).
        at_fit = per_seed(result.knobs)
        noise = statistics.stdev(at_fit) if len(at_fit) > 1 else 0.0
        paired = len(knobs) <= PAIRED_UP_TO
        profile = identify(evaluate, result, knobs, bounds, paired, noise)
        redraws = redrawn_targets(run_dir, run.manifest.raw, suite, name, refits)
        again = [
            fit_to(wanted, FIT_SEED + REFIT_SEED * (r + 1), r + 1)[0].knobs
            for r, wanted in enumerate(redraws)
        ]
        # Each fit's start, so a knob no fit moved (the run does not see it) is told apart
        # from one whose fits agree because the run pins it.
        starts = [initial, *(jittered(initial, bounds, r + 1) for r in range(refits))]
        known = agreements(knobs, result.knobs, again, profile, starts)
    params = with_knobs(base, result.knobs)
    shown = with_knobs(params, {"seed": FIT_SEED})
    sim_profile = profile_of_records(simulate(suite, shown), name)
    return FitResult(
        params.label(), params, target, sim_profile, result, name, known, counted[0] + 1
    )
