"""``numericjev power``: simulated replicate comparisons judged as ``compare`` judges."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.backends.sim.params import RATES
from simstudy.intervals import share_interval
from tests.runhelpers import cli

EXACT = "sim:" + ",".join(f"{k}=0" for k in RATES)  # every mechanism off: an exact reader
SMALL = ["--param", "per_operator=2", "--families", "4,8", "--replicates", "20",
         "--metric", "nmae"]  # fmt: skip


def run_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, object]:
    assert cli("power", *args, "--json") == 0
    return orjson.loads(capsys.readouterr().out)


def test_a_large_difference_is_found_and_an_exact_a_a_never_called(
    capsys: pytest.CaptureFixture[str],
) -> None:
    data = run_json(capsys, "--model", EXACT, "--vary", "slip_ten=1", *SMALL)
    assert data["simulated"] is True
    rows = {r["alternative"]: r for r in data["rows"]}  # type: ignore[attr-defined]
    moved = rows["slip_ten=1"]
    assert moved["effect"] > 5  # every arithmetic result ten cells off: about +10 pp NMAE
    # The default bootstrap-t at 8 families: far from every replicate (its cost in power;
    # the t found all 20), never a false call below.
    assert moved["power"]["8"] >= 0.5
    # The exact reader against itself: no difference anywhere, so no cell is ever called.
    a_a = next(r for label, r in rows.items() if label.startswith("A/A"))
    assert a_a["effect"] == 0.0 and a_a["any_cell"]["8"] == 0.0


def test_power_takes_the_verdict_test_as_compare_does(capsys: pytest.CaptureFixture[str]) -> None:
    # --test t: the t finds more at 4 families than the default bootstrap-t does.
    args = ("--model", EXACT, "--vary", "slip_ten=1", *SMALL)
    t = run_json(capsys, *args, "--test", "t")
    default = run_json(capsys, *args)
    assert (t["test"], default["test"]) == ("t", "bootstrap_t")
    power_t, power_default = (d["rows"][1]["power"] for d in (t, default))  # type: ignore[index]
    assert power_t["4"] > power_default["4"]
    with pytest.raises(SystemExit) as refused:  # the study's test, not a user's choice
        cli("power", *args, "--test", "wild")
    assert refused.value.code == 2 and "invalid choice: 'wild'" in capsys.readouterr().err


def test_the_table_says_simulated_and_how_it_was_judged(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli("power", "--model", EXACT, "--vary", "slip_ten=1", *SMALL) == 0
    out = capsys.readouterr().out
    assert "SIMULATED" in out and "Holm" in out and "| slip_ten=1 |" in out
    # Every share with its exact interval: 20 comparisons, none called -> [0.00, 0.17].
    assert "0.00 [0.00, 0.17] any cell" in out and "Clopper-Pearson" in out


def test_five_of_a_hundred_is_not_shown_to_be_at_or_below_five_percent() -> None:
    lo, hi = share_interval(5, 100)
    assert round(lo, 3) == 0.016 and round(hi, 3) == 0.113


@given(st.integers(1, 500).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
def test_a_share_lies_in_its_interval(case: tuple[int, int]) -> None:
    hits, trials = case
    lo, hi = share_interval(hits, trials)
    assert 0.0 <= lo <= hits / trials <= hi <= 1.0
    assert (lo == 0.0) == (hits == 0) and (hi == 1.0) == (hits == trials)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--vary", "nonsense=1"], "sim has no knob 'nonsense'"),
        (["--vary", "confusion"], "--vary takes KNOB=V1,V2"),
        (["--vary", "confusion=2"], "must lie in [0, 1]"),
        (["--vary", "confusion=0.2,abc"], "sim knob confusion='abc' is not a number"),
        (["--vary", "confusion=0.2", "--model", "oracle"], "not a sim spec"),
        (["--vary", "confusion=0.2", "--families", "x"], "whole numbers"),
        (["--vary", "confusion=0.2", "--decoder", "tree7"], "is not one of"),
    ],
)
def test_bad_input_is_one_line(
    capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    assert cli("power", *args) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err
