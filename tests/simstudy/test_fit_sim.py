"""``numericjev fit-sim``: a run of the sim with known knobs is fitted back to them, each
knob is judged by refits over the run's own draw noise, and the command's output and errors
are what a user needs."""

from __future__ import annotations

import math
from pathlib import Path

import orjson
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from simstudy.fitsim import fit_run
from simstudy.fitting import Fit, Identification, distance, fit, identify
from simstudy.refits import Agreement, jittered, redrawn_targets
from tests.runhelpers import cli

KNOWN = {"confusion": 0.4, "slip_digit": 0.5}  # both far from their defaults
FAMILIES = ["--param", "per_operator=8"]  # 32 families: a fit of two knobs in seconds
SMALL = ["--param", "per_operator=2", "--decoders", "direct,tree2"]  # 8 families, 2 decoders


def _sim_run(folder: Path, knobs: dict[str, float], *args: str) -> Path:
    spec = "sim:" + ",".join(f"{k}={v}" for k, v in knobs.items()) + ",seed=5"
    assert cli("run", "--suite", "affine", "--model", spec, *args, "--run", str(folder),
               "--no-progress") == 0  # fmt: skip
    return folder


@pytest.fixture(scope="module")
def known_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("fit") / "run"
    return _sim_run(folder, KNOWN, *FAMILIES, "--decoders", "direct,tree2,tree10,digits")


@pytest.fixture(scope="module")
def small_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # confusion far above its default: every fit and refit of it moves it the same way.
    return _sim_run(tmp_path_factory.mktemp("fit") / "small", {"confusion": 0.4}, *SMALL)


@pytest.fixture(scope="module")
def bits_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # slip_bit moves only the bits decoder's figures: beside direct choice's it barely moves
    # the distance (a flat profile), yet every redraw of the run pins it.
    folder = tmp_path_factory.mktemp("fit") / "bits"
    return _sim_run(folder, {"slip_bit": 0.2}, "--param", "per_operator=2", "--decoders",
                    "direct,bits")  # fmt: skip


@pytest.mark.soak
@pytest.mark.timeout(600)  # about 75 simulated runs: past 120 s when the cores are shared
def test_fit_recovers_the_knobs_of_a_sim_run(known_run: Path) -> None:
    # Recovery tolerance: within 30% of each true value (the fit's own seeds differ from
    # the run's, so it matches figures, not draws; 32 families leave sampling noise, which
    # three seeds per try average down). Not every knob is this well identified: one that
    # touches a single domain (negative) can trade off against confusion (docs/models.md).
    result = fit_run(known_run, tuple(KNOWN), rounds=3, seeds=3, refits=0)
    for knob, true in KNOWN.items():
        got = result.fit.knobs[knob]
        assert abs(got - true) <= 0.3 * true, (knob, got, true)
    assert result.spec.startswith("sim:") and "confusion=" in result.spec


def test_a_fit_moves_a_knob_toward_the_run(small_run: Path) -> None:
    # The fast check of the soak test above: confusion 0.4 in the run, 0.1 at the start.
    result = fit_run(small_run, ("confusion",), rounds=2, seeds=1, refits=0)
    assert result.fit.knobs["confusion"] >= 0.2 and result.identification == ()


def test_a_knob_the_run_cannot_see_is_not_identified(small_run: Path) -> None:
    # The run has no bit decoder: slip_bit moves nothing, so every fit leaves it at its own
    # (jittered) start; the flat profile says the run does not measure it.
    result = fit_run(small_run, ("slip_bit",), rounds=1, seeds=1, refits=2)
    (only,) = result.identification
    assert only.value == 0.045 and only.verdict == "not identified, flat"
    assert only.unmoved and "does not see it" in only.why and len(set(only.refits)) == 2


@pytest.mark.timeout(300)  # about 45 simulated runs of 8 families
def test_a_flat_knob_whose_refits_agree_is_reported_with_its_interval(bits_run: Path) -> None:
    # The audit's defect: a knob fitted well by every refit was printed "not identified
    # (flat)" because the distance barely moves with it. Its verdict is now the refits'
    # (marked flat), and its interval holds the run's true value.
    result = fit_run(bits_run, ("slip_bit",), rounds=2, seeds=1, refits=3)
    (only,) = result.identification
    assert only.flat and only.verdict in ("identified, flat", "weakly identified, flat")
    assert only.low <= 0.2 <= only.high and not only.unmoved


@given(st.integers(0, 50), st.floats(0.0, 1.0))
def test_a_refit_starts_within_a_factor_two_of_the_start(r: int, value: float) -> None:
    start = jittered({"k": value}, {"k": (0.0, 1.0)}, r)["k"]
    assert 0.0 <= start <= 1.0 and start == jittered({"k": value}, {"k": (0.0, 1.0)}, r)["k"]
    if value > 0.01:
        assert value / 2.01 <= start <= min(value * 2.01, 1.0)


def test_refits_of_a_sim_run_redraw_it_at_other_seeds(small_run: Path) -> None:
    from analysis.loading.run import load_run
    from simstudy.fitsim import suite_of_run
    from simstudy.profile import profile_of

    run = load_run(small_run)
    name, suite = suite_of_run(small_run)
    own = profile_of(run.outputs, name)
    sim = list(redrawn_targets(small_run, run.manifest.raw, suite, name, 2))
    assert len(sim) == 2 and sim[0] != sim[1] and own not in sim
    assert sim == list(redrawn_targets(small_run, run.manifest.raw, suite, name, 2))
    # A run that is not the sim's: a bootstrap of its families (seeded, so it repeats).
    boot = list(redrawn_targets(small_run, {}, suite, name, 2))
    assert len(boot) == 2 and boot[0] != own and set(boot[0]) <= set(own)
    assert boot == list(redrawn_targets(small_run, {}, suite, name, 2))


def _agreement(
    fits: tuple[float, ...], profile: str = "identified", starts: tuple[float, ...] = ()
) -> Agreement:
    rise = 0.0 if profile == "weak" else 1.0
    found = Identification("k", fits[0], rise, rise, ())
    return Agreement("k", fits[0], fits[1:], found, starts)


@pytest.mark.parametrize(
    ("fits", "verdict"),
    [
        ((0.2, 0.2, 0.25, 0.18), "identified"),
        ((0.1, 0.133, 0.1, 0.1), "weakly identified"),  # +33%: the audit's confusion
        ((0.15, 0.25, 0.3, 0.27), "weakly identified"),
        ((0.05, 0.2, 0.4, 0.27), "not identified"),
        ((0.0, 0.0, 0.0), "identified"),
        ((0.0, 0.1, 0.0), "not identified"),
    ],
)
def test_a_knob_is_identified_only_when_its_refits_agree(
    fits: tuple[float, ...], verdict: str
) -> None:
    assert _agreement(fits).verdict == verdict


@given(st.lists(st.floats(0.01, 1.0), min_size=3, max_size=6))
def test_a_flat_knob_keeps_what_its_refits_agree_on(fits: list[float]) -> None:
    # A flat profile (the distance barely moves with the knob) no longer discards agreeing
    # refits: the verdict is the refits' own, marked flat, with its value and interval.
    found = _agreement(tuple(fits), "weak")
    assert found.verdict == found.agreement + ", flat" and found.flat
    assert found.agreement == _agreement(tuple(fits)).agreement
    assert found.low <= found.value <= found.high
    assert found.as_json()["interval"] == [found.low, found.high]


def test_a_flat_knob_fitted_well_is_identified() -> None:
    # The audit's case: slip_bit fitted exactly by every refit, printed "not identified
    # (flat)" before; now its value and interval stand, and it says the run knows little.
    found = _agreement((0.045, 0.045, 0.046, 0.044), "weak", (0.045, 0.03, 0.08, 0.06))
    assert found.verdict == "identified, flat" and "little information" in found.why
    assert (found.low, found.high) == (0.044, 0.046)


@given(
    st.lists(st.floats(0.01, 1.0), min_size=3, max_size=6), st.sampled_from(["identified", "weak"])
)
def test_fits_that_never_left_their_starts_are_not_identified(
    fits: list[float], profile: str
) -> None:
    # However close the starts (and so the fits), a knob no fit moved is not measured.
    found = _agreement(tuple(fits), profile, tuple(fits))
    assert found.agreement == "not identified" and found.unmoved
    assert "does not see it" in found.why


def test_the_command_prints_the_spec_and_both_columns(
    small_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli("fit-sim", str(small_run), "--knobs", "confusion", "--rounds", "1", "--refits",
               "2", "--quiet") == 0  # fmt: skip
    out = capsys.readouterr().out
    assert "fitted spec: sim:" in out
    assert "| confusion |" in out and "fits (the run and its redraws)" in out
    assert "| Figure (%)" in out and "fitted sim (SIMULATED)" in out
    # The JSON without refits (the fast path): no knob judged, and it says so.
    assert cli("fit-sim", str(small_run), "--knobs", "confusion", "--rounds", "1", "--quiet",
               "--refits", "0", "--json") == 0  # fmt: skip
    data = orjson.loads(capsys.readouterr().out)
    assert data["simulated"] is True and data["spec"].startswith("sim")
    assert data["identification"] == {} and data["simulations"] > 1
    assert set(data["run"]) >= {"mape/direct/arithmetic", "nmae/tree2/provided"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--knobs", "temperature"], "fits rates only"),
        (["--knobs", "nonsense"], "fits rates only"),
        (["--rounds", "0"], "at least 1"),
        (["--refits", "1"], "at least 2"),
        (["--start", "oracle"], "not a sim spec"),
    ],
)
def test_bad_input_is_one_line(
    small_run: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    assert cli("fit-sim", str(small_run), "--quiet", *args) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err


def test_a_missing_run_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli("fit-sim", str(tmp_path / "nothing")) == 2
    assert capsys.readouterr().err.count("\n") == 1


@given(st.dictionaries(st.sampled_from(["a", "b"]), st.floats(0, 100), min_size=1))
def test_a_profile_is_at_distance_zero_from_itself(profile: dict[str, float]) -> None:
    assert distance(profile, profile) == 0.0


def test_coordinate_search_finds_a_known_minimum() -> None:
    # A smooth bowl at (0.3, 0.05): the search gets close from the defaults' side.
    def bowl(k: object) -> float:
        assert isinstance(k, dict)
        return (k["a"] - 0.3) ** 2 + 10 * (k["b"] - 0.05) ** 2

    result = fit(
        bowl, {"a": 0.1, "b": 0.2}, ["a", "b"], bounds={"a": (0, 1), "b": (0, 1)}, rounds=8
    )
    assert abs(result.knobs["a"] - 0.3) < 0.03 and abs(result.knobs["b"] - 0.05) < 0.01


def test_a_pair_that_trades_off_is_named_as_such() -> None:
    # A valley along a * b = 0.0625 (as confusion and negative both scale one noise): each
    # alone is pinned, the two moved in opposite directions are not.
    def valley(k: object) -> float:
        assert isinstance(k, dict)
        a, b = max(k["a"], 1e-6), max(k["b"], 1e-6)
        return math.log(a * b / 0.0625) ** 2 + 0.001 * math.log(a / b) ** 2 + 0.01

    bounds = {"a": (0.0, 1.0), "b": (0.0, 1.0)}
    result = fit(valley, {"a": 0.1, "b": 0.1}, ["a", "b"], bounds=bounds, rounds=6)
    assert abs(math.log(result.knobs["a"] * result.knobs["b"] / 0.0625)) < 0.1
    found = {i.knob: i.verdict for i in identify(valley, result, ["a", "b"], bounds)}
    assert found == {"a": "trades off with b", "b": "trades off with a"}


def _profiled(surface: object, at: dict[str, float]) -> list[Identification]:
    assert callable(surface)
    bounds = dict.fromkeys(at, (0.0, 1.0))
    return identify(surface, Fit(dict(at), surface(at), 1), list(at), bounds)


def test_a_confounded_pair_with_unequal_pulls_is_not_identified() -> None:
    # As confusion and negative on the affine suite: both widen one noise, confusion
    # (a, squared) pulls harder, and their refits agree (a bias, not a spread). Moved
    # alone or both by x1.43 in opposite directions the distance rises a lot (what the old
    # fixed-step check saw); along a^2 * b = const it does not, so neither is identified
    # and each one's interval spans the valley, the truth (0.15, 0.15) inside.
    def valley(k: object) -> float:
        assert isinstance(k, dict)
        a, b = max(k["a"], 1e-6), max(k["b"], 1e-6)
        return 10 * math.log(a * a * b / 0.15**3) ** 2 + 0.02 + 0.001 * math.log(a / b) ** 2

    found = _profiled(valley, {"a": 0.1, "b": 0.3375})  # on the valley, 33% and +125% off
    assert [i.verdict for i in found] == ["trades off with b", "trades off with a"]
    a, b = found
    assert min(a.down, a.up, b.down, b.up) > 10  # each alone: pinned many times over
    assert a.span is not None and b.span is not None
    assert a.span[0] < 0.1 < 0.15 < a.span[1] and b.span[0] < 0.15 < 0.3375 <= b.span[1]
    judged = Agreement("a", 0.1, (0.11, 0.115, 0.127), a)
    assert judged.verdict == "trades off with b" and "and the valley" in judged.why
    assert judged.why.endswith("the refits alone: identified")  # agreeing, and still flagged
    assert judged.low < 0.15 < judged.high


def test_independent_knobs_do_not_trade_off() -> None:
    # Unequal pulls, no valley; and a knob the distance barely sees beside a firm one (as
    # long beside confusion): the firm knob stays identified.
    def bowl(k: object) -> float:
        assert isinstance(k, dict)
        return 10 * math.log(k["a"] / 0.2) ** 2 + math.log(k["b"] / 0.3) ** 2 + 0.01

    assert [i.verdict for i in _profiled(bowl, {"a": 0.2, "b": 0.3})] == ["identified"] * 2

    def one_sided(k: object) -> float:
        assert isinstance(k, dict)
        return 10 * math.log(k["a"] / 0.2) ** 2 + 0.001 * max(0.0, math.log(k["c"])) + 0.01

    firm, flat = _profiled(one_sided, {"a": 0.2, "c": 0.5})
    assert firm.verdict == "identified" and flat.verdict == "weak" and firm.span is None


@example(1.0, 0.2, 1.3)  # flagged as a valley before: b's step toward its floor
@given(st.floats(0.3, 3.0), st.floats(0.1, 3.0), st.floats(0.6, 1.6))
def test_independent_knobs_off_their_floor_do_not_trade_off(
    pull_a: float, pull_b: float, off: float
) -> None:
    # As confusion (tree2's questions) beside slip_bit (bits') in a measured fit: the
    # distance is a sum of one term per knob, and the fit sits off b's floor, so a step of
    # b one way lowers it. Moved together they rise by the sum of their own rises: no valley.
    def apart(k: object) -> float:
        assert isinstance(k, dict)
        return 0.05 + pull_a * math.log(k["a"] / 0.3) ** 2 + pull_b * math.log(k["b"] / 0.2) ** 2

    assert all(not i.trades_with for i in _profiled(apart, {"a": 0.3, "b": 0.2 * off}))


def test_the_pattern_move_repeats_a_pass_with_every_knob_at_once() -> None:
    # From (0.1, 0.1) toward (0.4, 0.4): a pass doubles each; the pattern move doubles both
    # again at once and lands on the minimum.
    def bowl(k: object) -> float:
        assert isinstance(k, dict)
        return math.log(k["a"] / 0.4) ** 2 + math.log(k["b"] / 0.4) ** 2

    bounds = {"a": (0.0, 1.0), "b": (0.0, 1.0)}
    result = fit(bowl, {"a": 0.1, "b": 0.1}, ["a", "b"], bounds=bounds, rounds=1)
    assert result.history[-1][0] == "pattern" and result.knobs == {"a": 0.4, "b": 0.4}


def test_a_rise_within_the_seed_noise_is_weak() -> None:
    # The same bowl, its distance moving by 1.0 between sim seeds: a knob move that raises
    # the distance by less than that is not seen, so no knob is printed as identified.
    def bowl(k: object) -> float:
        assert isinstance(k, dict)
        return math.log(k["a"] / 0.4) ** 2 + 0.1

    result = fit(bowl, {"a": 0.1}, ["a"], bounds={"a": (0.0, 1.0)}, rounds=3)
    assert identify(bowl, result, ["a"], {"a": (0.0, 1.0)})[0].verdict == "identified"
    (noisy,) = identify(bowl, result, ["a"], {"a": (0.0, 1.0)}, noise=1.0)
    assert noisy.verdict == "weak" and noisy.bar == pytest.approx(1.0 / result.distance)
