"""Fixtures for the analysis tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from analysis_runs import RunFactory


@pytest.fixture
def runs(tmp_path: Path) -> RunFactory:
    """Factory for synthetic run folders in this test's temporary directory."""
    return RunFactory(tmp_path)
