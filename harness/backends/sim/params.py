"""The sim's knobs: one field per mechanism, each documented with the phenomenon it makes.

Defaults were fitted to the paper's tables, so they show its sign pattern on the affine
suite by construction (trees below direct choice in NMAE, K mattering, direct choice more
order- and affine-sensitive, ten-way trees losing to direct choice on x10^4): each leg holds
at 92-100% of 24 seeds (``sim-vs-paper --seeds 24``; ``tests/backends/test_sim_paper.py``
runs a short sweep, and the full one under soak). Every figure they make is simulated.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

from harness.errors import ConfigError


@dataclass(frozen=True)
class SimParams:
    """The sim model's knobs (rates are chances in [0, 1] unless a line says otherwise)."""

    seed: int = 0
    # Perception of the state's value, once per state (shared by every decoder of a job; a
    # provided result is read exactly). Slips are in grid units of the base result z.
    slip_one: float = 0.02  # z read one unit off (either way)
    slip_ten: float = 0.002  # z read ten units off
    slip_swap: float = 0.003  # z's two digits swapped (37 for 73)
    blunder: float = 0.0025  # a wrong result altogether: z times 0.5 to 1.5
    # Reading one question (fresh seeded noise per question; order-free, see ``position``).
    confusion: float = 0.1  # interval question of k options: s.d. of the reading is
    #   confusion * option width * sqrt(k/2) (deeper trees ask more questions, wider ones
    #   err a little more per question)
    confusion_value: float = 0.003  # value list: s.d. of the reading, share of its span
    distract: float = 0.08  # a list of 100 values of two decimal places: chance of a
    #   look-alike (same last digit, swapped digits, ten steps off), scaled by
    #   sqrt(options / 100) and by (places / 2) cubed
    distract_int: float = 0.00125  # the same for a list of whole numbers
    negative: float = 0.27  # an interval question showing negative numbers is read with
    #   (1 + 10 * negative) times its noise (the sign boundary confuses)
    sign_flip: float = 0.4  # a value list or index question showing negative numbers: x
    #   read with the wrong sign
    long: float = 1.0  # a ten-way interval question with bounds of 5+ digits, longer than x:
    #   x read by its leading digits (magnitude off); scaled by (options / 10) squared
    off_range: float = 0.5  # an interval question whose range does not hold the reading
    #   (an off-path question of a beam, or a greedy tree's after a wrong turn): the share
    #   of the reading's mass beyond the range spread evenly over the options; 0 puts it on
    #   the range's own options (the option nearest the reading takes almost all of it)
    provided: float = 0.25  # question noise and hazards scale by this when x is provided
    # Position prior: a tilt of each option's log-probability, drawn per option order.
    primacy: float = 0.27  # log-odds bonus of the first-listed option
    position: float = 0.3  # s.d. of a per-position log-odds prior (per question, per
    #   order) at 10 options, scaled by sqrt(options / 10): long lists lean more
    # Conversions and exploratory kinds.
    slip_digit: float = 0.135  # a digit question answered with a wrong digit (near ones likelier;
    #   a tenth as often when the index is x itself, L = 0 and eps = 1)
    slip_bit: float = 0.045  # a bit or set question answered wrongly
    threshold_lapse: float = 0.27  # a threshold question answered at random (arithmetic)
    # Reporting and repetition.
    temperature: float = 1.0  # reported p = p^(1/T) renormalised; 1 = calibrated (0.05-20)
    fresh_repeats: float = 0.0  # 1: identical questions get fresh draws (per process!)

    @classmethod
    def parse(cls, items: Mapping[str, str]) -> SimParams:
        """Knobs from ``key=value`` text; refuses unknown keys and bad numbers in one line."""
        known = {f.name for f in fields(cls)}
        values: dict[str, Any] = {}
        for key, text in items.items():
            if key not in known:
                raise ConfigError(f"sim has no knob {key!r}; knobs: {', '.join(sorted(known))}")
            try:
                values[key] = int(text) if key == "seed" else float(text)
            except ValueError as exc:
                raise ConfigError(f"sim knob {key}={text!r} is not a number") from exc
            check_knob(key, values[key])
        return cls(**values)

    def label(self) -> str:
        """The model spec that rebuilds these knobs (``sim`` or ``sim:k=v,...``)."""
        default = SimParams()
        changed = [f"{k}={_short(v)}" for k, v in asdict(self).items() if v != getattr(default, k)]
        return "sim:" + ",".join(changed) if changed else "sim"


KNOBS = tuple(f.name for f in fields(SimParams) if f.name != "seed")
RATES = tuple(k for k in KNOBS if k not in ("temperature", "fresh_repeats"))


def check_knob(key: str, value: float) -> None:
    """Refuse a knob value outside its range (ConfigError, one line with the range)."""
    if key == "seed":
        return
    if key == "temperature":
        if not 0.05 <= value <= 20:
            raise ConfigError(f"sim knob temperature must lie in [0.05, 20]; got {value}")
    elif key == "fresh_repeats":
        if value not in (0.0, 1.0):
            raise ConfigError(f"sim knob fresh_repeats must be 0 or 1; got {value}")
    elif not 0.0 <= value <= 1.0:
        raise ConfigError(f"sim knob {key} must lie in [0, 1]; got {value}")


def _short(value: float) -> str:
    """A knob value as short text that parses back to the same float."""
    if isinstance(value, int):
        return str(value)
    text = f"{value:.6g}"
    return text if float(text) == value else repr(value)
