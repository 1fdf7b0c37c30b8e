"""Seeded fault injection for ``serve-sim``: which exchanges fail, and how.

A fault in ``KINDS`` only ever makes an exchange fail DETECTABLY, never turns a correct
answer into a different valid one, so a run against a faulty server, once its retries
succeed, gives a clean run's outputs (docs/reliability.md, "Faults do not change results").
Two are the model's own answer and recorded as refusals: ``refusal`` (in ``DECLINES``;
opt-in only, never part of ``mixed``) and ``badlabel`` on the openai-chat wire.

Whether a request is faulted, and how, is a pure function of the fault seed, a hash of
the request body and how many times that body has already been faulted. A retried body
therefore draws afresh, is never faulted more than ``max_per_body`` times in a row, and
the whole pattern repeats exactly for the same seed and the same requests.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from harness.errors import ConfigError

# Every kind ``--faults`` accepts, in the order cumulative probabilities are laid out.
KINDS = (
    "429",  # rate limited, with Retry-After and retry-after-ms
    "500",  # FastAPI-style {"detail": {...}}
    "503",  # OpenAI-style {"error": {...}}
    "529",  # overloaded
    "reset",  # connection dropped (TCP RST) after the request was read
    "truncated",  # 200 whose JSON body is cut in half
    "malformed",  # 200 whose body is not JSON at all
    "badlabel",  # 200 naming a label outside the criteria
    "missing",  # 200 lacking one question's answer
    "html",  # 502 HTML error page from a proxy
    "slow",  # the right answer, but after the client's timeout
)

# Faults that are the model's answer rather than a failed exchange: a client records them
# (as refusals) and does not retry, so they change outputs by design. Never in ``mixed``.
DECLINES = ("refusal",)  # one question declined, in the wire's refusal shape

SPEC_HELP = (
    "KIND=P[,KIND=P...] with P a probability per request; kinds: "
    + ", ".join((*KINDS, *DECLINES))
    + "; mixed=P spreads P evenly over all kinds (e.g. mixed=0.10 or 429=0.03,reset=0.01)"
)


@dataclass(frozen=True)
class FaultSpec:
    """Probability per request of each fault kind (kinds absent have probability 0)."""

    rates: tuple[tuple[str, float], ...] = ()

    @classmethod
    def parse(cls, text: str | None) -> FaultSpec:
        """Parse ``429=0.03,reset=0.01`` or ``mixed=0.1``; refuses unknown kinds and bad sums."""
        totals = dict.fromkeys((*KINDS, *DECLINES), 0.0)
        for item in (text or "").split(","):
            if not item.strip():
                continue
            kind, sep, value = item.partition("=")
            kind = kind.strip().lower()
            if not sep:
                raise ConfigError(f"--faults takes {SPEC_HELP}; got {item!r}")
            try:
                p = float(value)
            except ValueError:
                raise ConfigError(f"--faults: {kind}={value!r} is not a probability") from None
            if not 0.0 <= p <= 1.0:
                raise ConfigError(f"--faults: {kind}={value} must lie in [0, 1]")
            if kind == "mixed":
                for name in KINDS:
                    totals[name] += p / len(KINDS)
            elif kind in totals:
                totals[kind] += p
            else:
                raise ConfigError(
                    f"--faults: unknown kind {kind!r}; kinds: mixed, "
                    f"{', '.join((*KINDS, *DECLINES))}"
                )
        total = sum(totals.values())
        if total > 1.0 + 1e-9:
            raise ConfigError(f"--faults: probabilities add up to {total:.3f}, more than 1")
        return cls(tuple((k, p) for k, p in totals.items() if p > 0))

    def describe(self) -> str:
        """``429=0.03,reset=0.01`` form, or ``none``."""
        return ",".join(f"{k}={p:.4g}" for k, p in self.rates) or "none"


def _uniform(seed: int, digest: bytes, n: int) -> float:
    h = hashlib.blake2b(digest, digest_size=8, key=seed.to_bytes(16, "big", signed=True))
    h.update(n.to_bytes(8, "big"))
    return int.from_bytes(h.digest(), "big") / 2.0**64


class FaultPlan:
    """Decides, per request body, whether and how to fail it (deterministic for a seed)."""

    def __init__(self, spec: FaultSpec, seed: int = 0, max_per_body: int = 3) -> None:
        self.spec = spec
        self.seed = seed
        self.max_per_body = max_per_body
        # body digest -> faults served in a row; dropped at the first clean reply, so it
        # holds only bodies that are mid-retry.
        self._streak: dict[bytes, int] = {}

    def decide(self, body: bytes) -> str | None:
        """The fault for this arrival of ``body``, or None to answer it correctly."""
        if not self.spec.rates:
            return None
        digest = hashlib.blake2b(body, digest_size=16).digest()
        n = self._streak.get(digest, 0)
        fault = None
        if n < self.max_per_body:
            u = _uniform(self.seed, digest, n)
            edge = 0.0
            for kind, p in self.spec.rates:
                edge += p
                if u < edge:
                    fault = kind
                    break
        if fault is None:
            self._streak.pop(digest, None)
        else:
            self._streak[digest] = n + 1
        return fault
