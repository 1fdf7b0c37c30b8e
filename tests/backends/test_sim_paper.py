"""The default sim reproduces the paper's sign pattern (issue: "an offline model that tells
the truth"). Every figure here is simulated; the paper's are in ``simstudy.paper``."""

from __future__ import annotations

import pytest

from harness.backends.sim import SimParams
from simstudy.paper import affine_profile
from simstudy.profile import Profile
from simstudy.vs_paper import sim_profiles

TREES = ("tree2", "tree4", "tree10")


@pytest.fixture(scope="module")
def sim() -> tuple[Profile, Profile]:
    """The default sim's affine and exploratory profiles (seed 0, what `make run` shows)."""
    return sim_profiles(SimParams())


def test_trees_have_lower_nmae_than_direct_choice(sim: tuple[Profile, Profile]) -> None:
    affine, _ = sim
    for tree in TREES:
        assert affine[f"nmae/{tree}/arithmetic"] < affine["nmae/direct/arithmetic"], tree


def test_the_branching_factor_matters(sim: tuple[Profile, Profile]) -> None:
    affine, _ = sim
    mapes = [round(affine[f"mape/{tree}/arithmetic"], 2) for tree in TREES]
    assert len(set(mapes)) == len(mapes), mapes


def test_direct_choice_is_the_more_order_and_affine_sensitive(
    sim: tuple[Profile, Profile],
) -> None:
    affine, _ = sim
    for gap in ("ordering_gap", "affine_gap"):
        for tree in TREES:
            assert (
                affine[f"{gap}/tree/arithmetic".replace("tree", tree, 1)]
                < (affine[f"{gap}/direct/arithmetic"])
            ), (gap, tree)


def test_some_domain_reverses_ten_way_trees_and_direct_choice(
    sim: tuple[Profile, Profile],
) -> None:
    affine, _ = sim
    domains = ("int", "x0.01", "minus50", "x10000")
    worse = [
        d
        for d in domains
        if affine[f"mape/tree10/arithmetic/{d}"] > affine[f"mape/direct/arithmetic/{d}"]
    ]
    assert worse, "tree10 is better than direct choice in every domain"
    # The paper's reversal is on the long domain: 30.96% against 0.52%.
    assert "x10000" in worse


def test_four_way_intervals_beat_direct_choice_on_the_exploratory_suite(
    sim: tuple[Profile, Profile],
) -> None:
    # Twelve questions asked four times each: one seed is one draw of a tiny suite, in which
    # direct choice's rare look-alikes may not happen at all, so the profile is the mean over
    # twelve seeds (simstudy.vs_paper; README: the sim beside the paper).
    _, exploratory = sim
    assert exploratory["mape/tree4/arithmetic"] < exploratory["mape/direct/arithmetic"]


@pytest.mark.parametrize(
    "key",
    [
        "mape/direct/arithmetic",
        "nmae/direct/arithmetic",
        "affine_gap/direct/arithmetic",
        "mape/tree10/arithmetic",
        "nmae/tree10/arithmetic",
    ],
)
def test_headline_figures_are_near_the_papers(sim: tuple[Profile, Profile], key: str) -> None:
    # The defaults were fitted to the paper's tables (docs/models.md: the sim beside the paper):
    # these land within 25% of the paper's values; docs/models.md shows every cell,
    # the ones further off included (the four-way tree's MAPE above all).
    want = affine_profile()[key]
    assert abs(sim[0][key] - want) <= 0.25 * want, (key, sim[0][key], want)
