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


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_compare_says_when_the_release_gate_failed(tmp_path: Path) -> None:
    # GNU make exits 2 whatever the recipe's status: the target says why instead (issue 44).
    if not (ROOT / ".venv" / ".installed").exists():
        pytest.skip("the venv was not made by make")
    args = (f"--metric nmae --param per_operator=4 --fail-on-worse --no-progress "
            f"--out {tmp_path / 'gate'}")  # fmt: skip
    done = subprocess.run(
        ["make", "--no-print-directory", "compare", "MODELS=sim,sim:slip_ten=1",
         "SUITES=affine", f"ARGS={args}"],
        cwd=ROOT, capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 2
    assert "the release gate failed" in done.stderr
