"""Shared test configuration: Hypothesis settings profiles.

``fast`` (the default) keeps the whole suite to a few tens of seconds; ``ci`` runs more
examples. Pick one with ``HYPOTHESIS_PROFILE=ci`` or ``pytest --hypothesis-profile=ci``.
``deadline=None`` in both: a few examples build 255-option questions or million-cell grids,
and a per-example deadline would make their timing, not their result, fail the test.
"""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("fast", max_examples=100, deadline=None)
settings.register_profile("ci", max_examples=1000, deadline=None, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "fast"))
