"""``make analyze ARGS=--json > f`` writes valid JSON: make echoes no recipe line into stdout."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import orjson
import pytest

from tests.runhelpers import SMALL, cli

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
@pytest.mark.parametrize("target", ["analyze"])
def test_make_with_json_prints_json_alone(tmp_path: Path, target: str) -> None:
    folder = tmp_path / "run"
    assert cli("run", *SMALL, "--model", "oracle", "--run", str(folder), "--no-progress") == 0
    if not (ROOT / ".venv" / ".installed").exists():
        pytest.skip("the venv was not made by make")
    done = subprocess.run(
        ["make", "--no-print-directory", target, f"RUN={folder}", "ARGS=--json"],
        cwd=ROOT, capture_output=True, check=True,
    )  # fmt: skip
    orjson.loads(done.stdout)  # raises on a recipe line or anything else before the JSON
