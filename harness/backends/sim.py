"""The built-in simulated model: deterministic, fallible, and reading only the wire body.

It perceives the target with noise (more in the arithmetic condition than when the state
provides the result), answers interval and value questions from that perception, slips
more often on digit and bit conversions, and has a small bias toward the first-listed
option. Everything it says comes from hashing the seed with the body, so the in-process
model and ``numericjev serve-sim`` give identical answers. Its results are simulated.

Probabilities: the selected label gets the sim's confidence draw ``c`` (0.55 to 0.99). On
interval and value questions the rest, ``1 - c``, follows the sim's belief about x, a
normal distribution around its perceived value with its own perception noise as s.d.
(``noise_*`` times the perceived magnitude; none in the provided condition, so all mass on
the perceived cell), integrated over each option's interval. Other questions spread the
rest evenly; thresholds answer with their own logistic probability.
"""

from __future__ import annotations

import hashlib
import math
import struct
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from fractions import Fraction
from typing import Any, NamedTuple

import orjson

from harness.backends.base import Reply
from harness.backends.reading import (
    body_questions,
    choice_answer,
    informed_answer,
    json_size,
    perception_masses,
    read_question,
    region_edges,
    state_key,
    target_of,
    typed_answer,
    usage_of,
)
from harness.errors import ConfigError
from harness.prompts import Meaning, exact_label


@dataclass(frozen=True)
class SimParams:
    """The sim model's knobs; defaults give errors of the same order as the paper's."""

    seed: int = 0
    noise_arithmetic: float = 0.03  # relative s.d. of the perceived value
    noise_provided: float = 0.0
    blunder_arithmetic: float = 0.08  # chance of perceiving a wrong value altogether
    blunder_provided: float = 0.0
    slip_interval: float = 0.02  # x10 = chance of crossing a boundary within 10% of it
    slip_digit: float = 0.10  # chance of a wrong index digit
    slip_bit: float = 0.06  # chance of a flipped index bit
    order_bias: float = 0.7  # share of slips that move toward the first-listed option
    threshold_lapse_arithmetic: float = 0.08  # chance a threshold answer is a uniform guess
    threshold_lapse_provided: float = 0.0

    @classmethod
    def parse(cls, items: Mapping[str, str]) -> SimParams:
        """Knobs from ``key=value`` text; refuses unknown keys and bad numbers."""
        known = {f.name: f.type for f in fields(cls)}
        values: dict[str, Any] = {}
        for key, text in items.items():
            if key not in known:
                raise ConfigError(f"sim has no knob {key!r}; knobs: {', '.join(known)}")
            try:
                values[key] = int(text) if key == "seed" else float(text)
            except ValueError as exc:
                raise ConfigError(f"sim knob {key}={text!r} is not a number") from exc
            if key != "seed" and not 0.0 <= values[key] <= 1.0:
                raise ConfigError(f"sim knob {key} must lie in [0, 1]; got {text}")
        return cls(**values)


_FOUR_WORDS = struct.Struct(">4Q").unpack
_TWO_TO_MINUS_64 = 2.0**-64


class Draws:
    """Uniform numbers in [0, 1) derived from a hash of ``parts``: deterministic and cheap.

    Hashing replaces ``random.Random(seed)`` because seeding a Mersenne Twister per question
    cost more than the rest of the sim's answer together.
    """

    __slots__ = ("_values",)

    def __init__(self, *parts: object) -> None:
        self._values = uniforms(orjson.dumps(parts))

    def __getitem__(self, i: int) -> float:
        return self._values[i]

    def gauss(self, i: int, j: int) -> float:
        """A standard normal from two of the uniforms (Box-Muller)."""
        return math.sqrt(-2.0 * math.log(1.0 - self[i])) * math.cos(2.0 * math.pi * self[j])


def uniforms(text: bytes) -> list[float]:
    """The four uniforms of ``Draws`` whose parts ``orjson.dumps`` to ``text`` (for a caller
    that builds the text from pieces it keeps: ``uniforms(orjson.dumps(parts))[i] ==
    Draws(*parts)[i]``)."""
    digest = hashlib.blake2b(text, digest_size=32).digest()
    return [v * _TWO_TO_MINUS_64 for v in _FOUR_WORDS(digest)]


def answer_draw_prefix(seed: int, key: str) -> bytes:
    """The start of ``orjson.dumps(("answer", seed, (key, ...)))``: what every answer draw
    for the state ``key`` shares (``Asked.tail`` is the rest)."""
    return b'["answer",' + orjson.dumps(seed) + b",[" + orjson.dumps(key) + b","


_DEFAULT_PARAMS = SimParams()


@dataclass(frozen=True, slots=True)
class Asked:
    """What the sim reads from one question before it answers, the same for every state.

    ``tail`` ends the answer draw's text: the instructions and the first and last criteria
    identify a question (a tree level's intervals show in its end descriptions) and its
    option order, at a fraction of the cost of hashing all 100 criteria of a direct-choice
    question.
    """

    choice: Mapping[str, Any]  # the question as a choice (``as_choice``)
    meaning: Meaning | None  # None: a noul or score question the sim cannot read (it guesses)
    labels: list[str]  # the options as listed (shared: never mutated)
    tail: bytes
    typed: bool  # a noul or score question: the answer is sent as its own type
    edges: tuple[float, ...] | None  # region ends of an interval or value question
    size: int  # the length of the question's JSON text (for the simulated token count)
    zeros: dict[str, float]  # every label at probability 0 (copied per answer, never changed)

    @classmethod
    def read(cls, qid: str, question: Any) -> Asked:
        """Read ``question`` (BackendError("bad_request") when the sim cannot)."""
        choice, meaning = read_question(qid, question)
        criteria = choice["criteria"]
        labels = list(criteria)
        first, last = labels[0], labels[-1]
        key = (
            choice.get("instructions"),
            len(labels),
            first,
            criteria[first],
            last,
            criteria[last],
        )
        edges = None
        if meaning is not None and meaning.kind in ("interval", "value"):
            edges = region_edges(meaning.kind, meaning.lows_f)
        tail = orjson.dumps(key)[1:] + b"]"
        size = len(orjson.dumps(question))
        zeros = dict.fromkeys(labels, 0.0)
        return cls(choice, meaning, labels, tail, choice is not question, edges, size, zeros)


PERCEIVED_CACHE = 8192  # states remembered (jobs in flight share a few hundred)
QUESTIONS_CACHE = 16384  # question objects remembered (the affine suite asks ~3,000)


class _Seen(NamedTuple):
    """What the sim makes of one state, once: its perceived value and the draws' prefix."""

    value: Fraction | None
    value_f: float
    sigma: float  # s.d. of its belief about x (its own perception noise)
    provided: bool  # the state gives the result
    prefix: bytes  # ``answer_draw_prefix``


class SimModel:
    """A seeded, deterministic, fallible stand-in for a decision model."""

    name = "sim"
    simulated = True
    price_per_million = 0.0  # runs in process: nothing is billed

    def __init__(
        self,
        params: SimParams | None = None,
        known: Mapping[str, Fraction] | None = None,
        *,
        shared_questions: bool = False,
    ) -> None:
        """``shared_questions``: the caller hands the same, never mutated, question objects
        to every request (a run in process does: ``Question.wire``), so each is read once
        and remembered by identity; a server, whose every body is new, leaves it off."""
        self.params = params or SimParams()
        # ``known`` stays empty for runs: the sim knows no history, so recall questions are guesses.
        self.known = dict(known or {})
        # A job sends its state with every round: perceive it once (a function of the
        # state's canonical text, the params and ``known``, all fixed here).
        self._perceived: dict[str, _Seen] = {}
        # id -> (the question, what it reads as); the question is held, so its id stays its.
        self._asked: dict[int, tuple[Any, Asked]] | None = {} if shared_questions else None

    def perceive(self, state: Any, key: str | None = None) -> Fraction | None:
        """The value the sim believes the state describes, fixed for the whole job.

        Exact when there is no noise: ``Fraction(float(0.15))`` lies just below 0.15 and
        would put a provided result in the interval below it.
        """
        target = target_of(state, self.known)
        if target is None:
            return None
        p = self.params
        provided = isinstance(state, Mapping) and "result" in state
        noise = p.noise_provided if provided else p.noise_arithmetic
        blunder = p.blunder_provided if provided else p.blunder_arithmetic
        d = Draws("perceive", p.seed, key if key is not None else state_key(state))
        x = float(target)
        if d[0] < blunder:
            seen = x * (0.5 + d[1]) + (1 if d[2] < 0.5 else -1) * 10 * d[3]
        elif noise:
            seen = x * (1.0 + noise * d.gauss(1, 2))
        else:
            return target
        return Fraction(seen) if math.isfinite(seen) else None

    def _choose(self, seen: _Seen, asked: Asked, key: str) -> tuple[str, float]:
        """The label the sim picks, and the confidence it reports for it.

        With no perceived value or no meaning (a noul or score question it cannot read) the
        sim guesses, from the same hash of the state and the question.
        """
        p = self.params
        listed = asked.labels
        meaning = asked.meaning
        # ``uniforms``, computed only as needed (most answers use two of the four).
        d = _FOUR_WORDS(hashlib.blake2b(seen.prefix + asked.tail, digest_size=32).digest())
        confidence = 0.55 + 0.44 * (d[3] * _TWO_TO_MINUS_64)
        d0 = d[0] * _TWO_TO_MINUS_64
        x = seen.value
        if x is None or meaning is None:
            return listed[int(d0 * len(listed))], confidence
        seen_f = seen.value_f
        label = exact_label(meaning, x, seen_f)
        kind = meaning.kind
        if kind == "threshold":
            # P("x <= z") falls off smoothly (logistic, scale 0.5% of the magnitude) as z drops
            # below the perceived value; at z == seen it is 1 - slip_interval, like an interval.
            # A standard-normal jitter of the logit per question, and a lapse to a uniform
            # probability (arithmetic condition), let thresholds disagree with their
            # neighbours, as the paper's raw answers do (25 of 48 groups decrease somewhere).
            s, z = seen_f, float(meaning.at)
            scale = 0.005 * max(abs(s), abs(z)) or 1e-9
            slip = min(max(p.slip_interval, 1e-9), 1 - 1e-9)
            lapse = p.threshold_lapse_provided if seen.provided else p.threshold_lapse_arithmetic
            t = Draws("threshold", p.seed, key, asked.choice.get("instructions"), s)
            logit = (z - s) / scale + math.log((1 - slip) / slip) + t.gauss(0, 1)
            yes = 1.0 / (1.0 + math.exp(-min(max(logit, -60.0), 60.0)))
            yes = t[3] if t[2] < lapse else yes
            other = next(lab for lab in listed if lab != meaning.at_most)
            return (meaning.at_most, yes) if yes >= 0.5 else (other, 1.0 - yes)
        if kind != "interval" and kind != "value":
            # Digits of x slip like index digits; a bit of x or an explicit set like an index
            # bit (the kinds: digit, bit, actual_digit, actual_bit, set).
            slip = p.slip_digit if kind == "digit" or kind == "actual_digit" else p.slip_bit
            if d0 < slip:
                others = [lab for lab in listed if lab != label]
                return (
                    others[int(d[1] * _TWO_TO_MINUS_64 * len(others))] if others else label
                ), confidence
            return label, confidence
        i = meaning.rank[label]
        ranked = meaning.labels
        # Floats from here on: this is the sim's fuzzy reading, and Fraction arithmetic here
        # cost more than the rest of an answer. ``label`` above was chosen exactly.
        lo, hi = meaning.lows_f[i], meaning.highs_f[i]
        at = seen_f
        if kind == "value" and i + 1 < len(ranked):
            # A value question is answered with the nearest value, not the one below.
            hi = meaning.lows_f[i + 1]
            if at - lo > (hi - lo) / 2:
                i, lo, hi = i + 1, hi, hi + (hi - lo)
        width = hi - lo
        if width > 0 and d0 < p.slip_interval * 10:
            # Misreads happen near a boundary: within 10% of the width of either edge the sim
            # may cross it, more readily toward the first-listed option (order bias).
            rel = (at - lo) / width
            # A value exactly on a lower bound (a provided result) is unambiguous: no slip.
            step = -1 if 0 < rel < 0.1 else 1 if rel > 0.9 else 0
            j = i + step
            if step and 0 <= j < len(ranked):
                toward_first = (meaning.rank[listed[0]] - i) * step > 0
                weight = (1 + p.order_bias) if toward_first else (1 - p.order_bias)
                if d[1] * _TWO_TO_MINUS_64 < 0.5 * weight:
                    i = j
        return ranked[i], confidence

    def _seen(self, state: Any) -> tuple[str, _Seen]:
        """The state's canonical text and what the sim makes of it (remembered)."""
        key = state_key(state)
        seen = self._perceived.get(key)
        if seen is None:
            perceived = self._perceived
            if len(perceived) >= PERCEIVED_CACHE:
                perceived.clear()
            value = self.perceive(state, key)
            value_f = 0.0 if value is None else float(value)
            provided = isinstance(state, Mapping) and "result" in state
            p = self.params
            # The sim knows its own perception noise: x ~ Normal(seen, sigma) is its belief.
            noise = p.noise_provided if provided else p.noise_arithmetic
            sigma = 0.0 if value is None else abs(value_f) * noise
            prefix = answer_draw_prefix(p.seed, key)
            seen = perceived[key] = _Seen(value, value_f, sigma, provided, prefix)
        return key, seen

    def _read(self, qid: str, question: Any) -> Asked:
        """``Asked.read``, remembered by identity with ``shared_questions``."""
        remembered = self._asked
        if remembered is None:
            return Asked.read(qid, question)
        hit = remembered.get(id(question))
        if hit is not None and hit[0] is question:
            return hit[1]
        asked = Asked.read(qid, question)
        if len(remembered) >= QUESTIONS_CACHE:
            remembered.clear()
        remembered[id(question)] = (question, asked)
        return asked

    def respond(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """The response body for ``body`` (sync: also used by the loopback server)."""
        questions = body_questions(body)
        # Every question is read (and a bad one refused) before any is answered.
        read = self._read
        asked = [(qid, read(qid, question)) for qid, question in questions.items()]
        # Every draw depends on the state too: otherwise all cases that share a question text
        # (the expression lives in the state) would slip, or guess, together.
        key, seen = self._seen(body.get("state"))
        value_f, sigma = seen.value_f, seen.sigma
        answers = {}
        # noul and score questions are answered as the choice they amount to (``as_choice``):
        # a noul's probability is that of "true", a score's the distribution over its levels.
        for qid, one in asked:
            label, confidence = self._choose(seen, one, key)
            if one.edges is not None and seen.value is not None:
                # The choice is made above, exactly as before; the probabilities only add
                # where the sim believes x lies, so probability-aware decoders have
                # something to read (the rest of 1 - confidence no longer spreads evenly).
                meaning = one.meaning
                assert meaning is not None  # questions with edges have an interval meaning
                belief = perception_masses(
                    meaning.kind, meaning.labels, meaning.lows_f, value_f, sigma, one.edges
                )
                answer = informed_answer(label, one.labels, confidence, belief, one.zeros)
            else:
                answer = choice_answer(label, one.labels, confidence)
            answers[qid] = typed_answer(questions[qid], answer) if one.typed else answer
        size = None
        if self._asked is not None:  # remembered questions: their JSON length is known
            size = json_size(body, {qid: one.size for qid, one in asked})
        return {"model": "sim", "answers": answers, "usage": usage_of(body, size)}

    async def answer(self, body: Mapping[str, Any]) -> Reply:
        """Answer in process."""
        response = self.respond(body)
        # No cost of its own: the run prices its tokens (free unless --price-per-million).
        return Reply(response, model="sim", usage=response["usage"])

    def describe(self) -> dict[str, Any]:
        """The manifest's model spec; ``label`` names the knobs set (``sim:seed=7``), as
        ``--model`` takes them, so that ``list`` tells two simulated "versions" apart."""
        params = asdict(self.params)
        changed = [f"{k}={v}" for k, v in params.items() if v != getattr(_DEFAULT_PARAMS, k)]
        return {
            "name": "sim",
            "label": "sim:" + ",".join(changed) if changed else "sim",
            "backend": "sim",
            "simulated": True,
            "base_url": None,
            "params": params,
        }

    async def aclose(self) -> None:
        """Nothing to release."""
