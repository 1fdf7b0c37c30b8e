"""Historical recall of three S&P 500 closes (paper, Section 4, Section 5.6 and its follow-up).

The S&P 500 price index's official closing level on the last trading day of 2019, 2020 and
2023, with the references of the paper's source audit. Ten-way decoding on [0, 10000) at
0.01 points (N = 1,000,000) in the ``recall`` condition (the state holds only the
question) and the matched ``provided`` control (the state adds the reference close), two
orders and two repeats per date.

The follow-up changed both the prompt and the branching factor to two. It is a separate
protocol and a separate suite, ``historical_binary``: never pool it with ``historical``.
The paper reports it "over six outputs" per condition (§5.5), half the ten-way protocol's
twelve, without saying which half: this suite keeps both option orders and asks each once
(``repeats``, a suite parameter, default 1; ``--param repeats=2`` gives twelve). Neither
subject sentence below is the paper's: it gives the arithmetic prompts (Appendix
"Complete Prompt Specification") but not the historical ones, nor the follow-up's change.
This is a recall diagnostic, not forecasting: the sim model knows no history and guesses.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction

from harness.errors import ConfigError
from harness.protocol.cases import Case, Suite
from harness.protocol.grid import Grid
from harness.protocol.registry import SuiteBuilder

SEED = 20260923  # orders the scheduler's shuffle only; the cases are fixed
CONDITIONS = ("recall", "provided")
REPEATS = 2
BINARY_REPEATS = 1  # six outputs per condition: 3 dates x 2 orders x 1 (paper §5.5)
GRID = Grid.from_range(0, 10000, "0.01")

# (date, reference close); the last trading day of 2023 was Friday 2023-12-29.
CLOSES = (
    ("2019-12-31", Fraction("3230.78")),
    ("2020-12-31", Fraction("3756.07")),
    ("2023-12-29", Fraction("4769.83")),
)
# Neither subject names a number: in the recall condition the state holds only the question.
# The paper does not print either wording; these are the harness's own.
SUBJECT = "Determine the numerical value x asked for in state."
SUBJECT_BINARY = "Recall the number x that the question in state asks for."


def question(date: str) -> str:
    """The state's question for one trading day."""
    year = date[:4]
    return (
        f"the S&P 500 price index official closing level on the last trading day of {year} ({date})"
    )


def _cases(subject: str) -> tuple[Case, ...]:
    return tuple(
        Case(f"f{family}/{date}", family, date, {"question": question(date)}, close, GRID, subject)
        for family, (date, close) in enumerate(CLOSES)
    )


def build(seed: int = SEED, decoders: tuple[str, ...] = ("tree10",)) -> Suite:
    """The ten-way historical readout of Section 5.6."""
    return Suite("historical", seed, _cases(SUBJECT), decoders, CONDITIONS, repeats=REPEATS)


def build_binary(
    seed: int = SEED, decoders: tuple[str, ...] = ("tree2",), repeats: int = BINARY_REPEATS
) -> Suite:
    """The follow-up: a binary tree and a changed subject sentence (reported on its own)."""
    if repeats < 1:
        raise ConfigError(f"repeats must be >= 1; got {repeats}")
    return Suite(
        "historical_binary",
        seed,
        _cases(SUBJECT_BINARY),
        decoders,
        CONDITIONS,
        repeats=repeats,
        params={"repeats": repeats},
    )


PARAMS: dict[str, Callable[[str], object]] = {}
BINARY_PARAMS: dict[str, Callable[[str], object]] = {"repeats": int}
# The entry points (pyproject.toml): two protocols, two suites.
SUITE = SuiteBuilder(build, PARAMS)
BINARY = SuiteBuilder(build_binary, BINARY_PARAMS)
