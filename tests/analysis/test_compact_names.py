"""The job names held compact (``interning.CompactNames``) give back every name and code."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from analysis.loading.columns.interning import CompactNames, NameCodes


@given(st.lists(st.text(), unique=True), st.lists(st.text()))
def test_names_and_codes_are_the_interners(names: list[str], others: list[str]) -> None:
    compact = CompactNames(names)
    assert list(compact) == names and len(compact) == len(names)
    assert compact == tuple(names) == compact and compact == CompactNames(names)
    assert compact != (*names, "x")
    asked = names + others
    want = [names.index(n) if n in names else -1 for n in asked]
    assert compact.codes_of(asked).tolist() == want
    codes = NameCodes(compact)
    assert [codes.get(n, -1) for n in asked] == want


def test_names_whose_hashes_meet_are_told_apart_by_their_text() -> None:
    compact = CompactNames(["a", "b", "c", "d"])
    # Every name given one hash: the look-up must walk the equal hashes and compare names.
    compact.hashes[:] = hash("c")
    compact.order[:] = np.arange(4)
    assert compact.codes_of(["c", "zz"]).tolist() == [2, -1]
