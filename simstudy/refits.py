"""What a fit knows: refits over the target run's own draw noise, and each knob's verdict.

A fit matches one run, and that run is one draw: another draw of the same model would ask
the fit for other knobs. So ``fit-sim`` fits REFITS more targets drawn like the run (other
sim seeds of its knobs when the run is a sim run, a bootstrap of its families otherwise),
each with its own sim seeds and from its own start (``jittered``: a search stops near its
start where the run leaves a knob free). A knob whose fits all land within TOLERANCE of
their median is identified, whatever its pull on the distance; its interval is the fits'
range. The profile (``fitting.identify``) then says what kind of knowledge that is: a knob
the distance barely moves with is ``flat`` (little information: its agreement is the
refits' alone, and a bias they cannot show is likelier), one that moves it but another knob
compensates ``trades off`` (its interval then spans that valley too); a knob whose refits
disagree is not identified. Refits show the fit's spread over draws, not its bias: on the
affine suite the confounded pair's refits agreed on wrong values (docs/models.md): the
valley check is what flags them.
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from harness.backends.sim import SimParams
from harness.protocol.cases import Suite
from simstudy.fitting import Identification
from simstudy.profile import Profile, profile_of_records
from simstudy.simulate import simulate, with_knobs

REFITS = 3  # resampled targets refitted by default (each costs one more fit)
JITTER = 2.0  # a refit starts at each knob's start times a factor in [1/JITTER, JITTER]
TOLERANCE = 0.3  # identified: every fit within 30% of the fits' median
WEAK = 2.0  # weakly identified: every fit within a factor of 2 of the median
TARGET_SEED = 10_000  # a sim run's redraws: its seed + TARGET_SEED * (r + 1)


@dataclass(frozen=True)
class Agreement:
    """One knob: the fit to the run, the fits to its redraws, and the profile around it."""

    knob: str
    value: float  # fitted to the run itself
    refits: tuple[float, ...]  # fitted to the redrawn targets
    profile: Identification  # the distance around the fit, this knob moved alone
    starts: tuple[float, ...] = ()  # where each fit began, the run's first (empty: unknown)

    @property
    def fits(self) -> tuple[float, ...]:
        """Every fit of this knob: the run's first, then the redraws'."""
        return (self.value, *self.refits)

    @property
    def low(self) -> float:
        """The interval's lower end: the smallest fit, or of the valley it trades along."""
        return min(self.fits + (self.profile.span or ()))

    @property
    def high(self) -> float:
        """The interval's upper end: the largest fit, or of the valley it trades along."""
        return max(self.fits + (self.profile.span or ()))

    @property
    def spread(self) -> float:
        """How far the fits (the valley aside) stray from their median: the largest ratio
        either way (1: all equal)."""
        mid, low, high = statistics.median(self.fits), min(self.fits), max(self.fits)
        if mid <= 0:
            return 1.0 if high <= 0 else float("inf")
        return max(high / mid, mid / low if low > 0 else float("inf"))

    @property
    def unmoved(self) -> bool:
        """No fit moved the knob from its own start: the run does not see it, and fits that
        agree only agree where they began."""
        return bool(self.starts) and all(
            f == s for f, s in zip(self.fits, self.starts, strict=True)
        )

    @property
    def flat(self) -> bool:
        """The distance barely moves with the knob alone (little information)."""
        return self.profile.verdict == "weak"

    @property
    def agreement(self) -> str:
        """What the refits say alone: ``identified`` (within TOLERANCE of their median),
        ``weakly identified`` (within a factor WEAK) or ``not identified``."""
        if not self.refits or self.unmoved:
            return "not identified"
        mid = statistics.median(self.fits)
        if max(self.fits) <= mid * (1 + TOLERANCE) and min(self.fits) >= mid * (1 - TOLERANCE):
            return "identified"
        return "weakly identified" if self.spread <= WEAK else "not identified"

    @property
    def verdict(self) -> str:
        """``trades off with ...`` where the profile finds a valley, else the refits'
        agreement, with ``, flat`` where the distance barely moves with the knob."""
        if self.profile.trades_with:
            return "trades off with " + ", ".join(self.profile.trades_with)
        return self.agreement + (", flat" if self.flat else "")

    @property
    def why(self) -> str:
        """The evidence behind the verdict, in a few words."""
        if not self.refits:
            return "no refits"
        if self.unmoved:
            return "no fit moved it from its start: the run does not see it"
        fits = f"fits {self.low:.3g}-{self.high:.3g} over {len(self.fits)} draws"
        if self.profile.trades_with:
            return (
                f"{fits} and the valley: another knob makes up for it; the refits alone: "
                f"{self.agreement}"
            )
        if self.flat:
            return f"{fits}; the distance barely moves with it: little information"
        return fits

    def as_json(self) -> dict[str, Any]:
        """The verdict and its evidence for ``--json``."""
        return {
            "verdict": self.verdict,
            "agreement": self.agreement,
            "flat": self.flat,
            "trades_with": list(self.profile.trades_with),
            "why": self.why,
            "value": self.value,
            "refits": list(self.refits),
            "starts": list(self.starts),
            "interval": [self.low, self.high],
            "distance_down": self.profile.down,
            "distance_up": self.profile.up,
            "bar": self.profile.bar,
        }


def agreements(
    knobs: Sequence[str],
    fitted: Mapping[str, float],
    refits: Sequence[Mapping[str, float]],
    profile: Sequence[Identification],
    starts: Sequence[Mapping[str, float]] = (),
) -> tuple[Agreement, ...]:
    """One Agreement per knob from the run's fit, the redraws' fits, the profile and (when
    given) each fit's start, the run's first."""
    by_knob = {p.knob: p for p in profile}
    return tuple(
        Agreement(
            k,
            fitted[k],
            tuple(r[k] for r in refits),
            by_knob[k],
            tuple(s[k] for s in starts),
        )
        for k in knobs
    )


def jittered(
    start: Mapping[str, float], bounds: Mapping[str, tuple[float, float]], r: int
) -> dict[str, float]:
    """Refit ``r``'s start: each knob times a seeded log-uniform factor within JITTER
    (clipped to its bounds; a knob at 0 starts at up to 0.01 * JITTER)."""
    rng = random.Random(f"refit-start/{r}")
    out = {}
    for name, value in start.items():
        lo, hi = bounds[name]
        factor = JITTER ** rng.uniform(-1.0, 1.0)
        moved = value * factor if value > 0 else 0.01 * factor
        out[name] = float(f"{min(max(moved, lo), hi):.3g}")
    return out


def redrawn_targets(
    run_dir: Path, manifest: Mapping[str, Any], suite: Suite, name: str, count: int
) -> Iterator[Profile]:
    """``count`` profiles drawn like the run's: its sim knobs at other seeds when the run
    was made by the sim, else a bootstrap of its families (seeded, so a refit repeats)."""
    model = manifest.get("model")
    params = model.get("params") if isinstance(model, Mapping) else None
    if isinstance(model, Mapping) and model.get("backend") == "sim" and isinstance(params, dict):
        sim = SimParams.parse({k: str(v) for k, v in params.items()})
        for r in range(count):
            again = with_knobs(sim, {"seed": sim.seed + TARGET_SEED * (r + 1)})
            yield profile_of_records(simulate(suite, again), name)
        return
    families: dict[str, list[dict[str, Any]]] = {}
    with (run_dir / "outputs.jsonl").open("rb") as f:
        for line in f:
            if line.strip():
                record = orjson.loads(line)
                families.setdefault(str(record.get("family", record.get("case"))), []).append(
                    record
                )
    names = sorted(families)
    for r in range(count):
        rng = random.Random(r)
        yield profile_of_records(_resampled(families, names, rng), name)


def _resampled(
    families: Mapping[str, list[dict[str, Any]]], names: Sequence[str], rng: random.Random
) -> Iterator[dict[str, Any]]:
    """The records of len(names) families drawn with replacement, each draw its own family
    (renamed, so a family drawn twice is two families and its orders still pair up)."""
    for j in range(len(names)):
        for record in families[rng.choice(names)]:
            tag = f"b{j}/"
            yield {
                **record,
                "family": tag + str(record.get("family")),
                "case": tag + str(record.get("case")),
                "job": tag + str(record.get("job")),
            }
