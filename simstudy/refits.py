"""What a fit knows: refits over the target run's own draw noise, and each knob's verdict.

A fit matches one run, and that run is one draw: another draw of the same model would ask
the fit for other knobs. So ``fit-sim`` fits REFITS more targets drawn like the run (other
sim seeds of its knobs when the run is a sim run, a bootstrap of its families otherwise),
each with its own sim seeds and from its own start (``jittered``: a search stops near its
start where the run leaves a knob free), and calls a knob identified only when every fit
lands within TOLERANCE of their median; its interval is the fits' range. A knob the
distance does not move (the profile, ``fitting.identify``) is not identified whatever its
refits say, nor is one that trades off with another (the pair moved at once along their
valley barely moves the distance); its interval then spans that valley too. Refits show the
fit's spread over draws, not its bias: on the affine suite the confounded pair's refits
agreed on wrong values (docs/models.md): the valley check is what flags them.
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
        """How far the fits stray from their median: the largest ratio either way (1: all equal)."""
        mid = statistics.median(self.fits)
        if mid <= 0:
            return 1.0 if self.high <= 0 else float("inf")
        return max(self.high / mid, mid / self.low if self.low > 0 else float("inf"))

    @property
    def verdict(self) -> str:
        """``identified``, ``weakly identified`` or ``not identified``."""
        if self.profile.verdict != "identified" or not self.refits:
            return "not identified"
        mid = statistics.median(self.fits)
        if self.high <= mid * (1 + TOLERANCE) and self.low >= mid * (1 - TOLERANCE):
            return "identified"
        return "weakly identified" if self.spread <= WEAK else "not identified"

    @property
    def why(self) -> str:
        """The reason behind the verdict, in a few words."""
        if self.profile.verdict == "weak":
            return "the distance barely moves with it"
        if self.profile.trades_with:
            with_ = ", ".join(self.profile.trades_with)
            return f"trades off with {with_}; its range spans the refits and the valley"
        if not self.refits:
            return "no refits"
        return f"fits {self.low:.3g}-{self.high:.3g} over {len(self.fits)} draws"

    def as_json(self) -> dict[str, Any]:
        """The verdict and its evidence for ``--json``."""
        return {
            "verdict": self.verdict,
            "why": self.why,
            "value": self.value,
            "refits": list(self.refits),
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
) -> tuple[Agreement, ...]:
    """One Agreement per knob from the run's fit, the redraws' fits and the profile."""
    by_knob = {p.knob: p for p in profile}
    return tuple(Agreement(k, fitted[k], tuple(r[k] for r in refits), by_knob[k]) for k in knobs)


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
