"""The analysis prints the numbers it printed before its memory followed the cells (issue 29).

``tests/data/analysis_pin_affine_small.json`` was written by the analysis of 619941e (every
output held as a column) from the pinned small affine sim run (``test_run_pin``): the whole
``analyze --json`` (Probabilities section included), ``analyze``'s Markdown and a digest of
the job viewer's packed block. The analysis now reads compact columns and per-cell,
per-family sums; a test here fails on any number that moved, read from the logs or from the
kept columns. Only what changes between two runs of the same command is masked: the run id,
its times and the latencies. Regenerate deliberately, after checking a change is intended:
``.venv/bin/python -m tests.analysis.test_same_numbers``.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import re
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from analysis.cli import main as analysis_main
from analysis.loading.viewer.rounds import load_rounds
from analysis.rendering.html_data import pack_rounds
from harness import Limits, ModelSpec, load_suite, run
from tests.runhelpers import SMALL

EXPECTED = Path(__file__).parents[1] / "data" / "analysis_pin_affine_small.json"
_ARGS = ("--bootstrap", "300")


def _run(folder: Path) -> None:
    # One request at a time in one process: the logs' order is the same every time (a mean
    # summed in another order may differ in its last bit, and a printed digit with it).
    # The run id given as the folder's name, as before ids were made unique: the tables pad
    # to it, and the pin was made so.
    suite = load_suite("affine", params=dict([SMALL[1].split("=")]))
    run(suite, ModelSpec("sim"), Limits(concurrency=1), folder=folder, run_id=folder.name)
    # Latencies are the one timed field the tables read: fixed, so two runs print alike.
    lines = []
    for n, line in enumerate((folder / "requests.jsonl").read_bytes().splitlines()):
        record = orjson.loads(line)
        record["latency_ms"] = float(n % 97) + 0.25
        lines.append(orjson.dumps(record) + b"\n")
    (folder / "requests.jsonl").write_bytes(b"".join(lines))


def _printed(*argv: str) -> str:
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    with contextlib.redirect_stdout(out):
        assert analysis_main(list(argv)) == 0
    out.flush()
    return out.buffer.getvalue().decode()  # type: ignore[attr-defined]


_VOLATILE = ("run_id", "created_utc", "run_dir", "hashes")


def _masked(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: ("*" if k in _VOLATILE else _masked(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [_masked(v) for v in value]
    return value


def _markdown(text: str, run_id: str) -> str:
    text = text.replace(run_id, "RUN")
    return re.sub(r"\(created [^)]*\)", "(created *)", text)


def pin(folder: Path) -> dict[str, Any]:
    """What the expected file holds, computed from one run folder by this tree's analysis."""
    run_id = orjson.loads((folder / "manifest.json").read_bytes())["run_id"]
    as_json = orjson.loads(_printed("analyze", str(folder), *_ARGS, "--json"))
    markdown = _printed("analyze", str(folder), *_ARGS)
    packed = pack_rounds(load_rounds(folder)).encode()
    return {
        "analyze_json": _masked(as_json),
        "analyze_markdown": _markdown(markdown, run_id).splitlines(),
        "job_viewer_sha256": hashlib.sha256(packed).hexdigest(),
    }


@pytest.fixture(scope="module")
def small_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("pin") / "run"
    _run(folder)
    return folder


@pytest.mark.parametrize("read", ["from the logs", "from the kept columns"])
def test_the_small_affine_run_analyses_to_the_pinned_numbers(small_run: Path, read: str) -> None:
    if read == "from the logs":
        for kept in (small_run / ".columns").glob("*"):
            kept.unlink()
    got = pin(small_run)
    expected = orjson.loads(EXPECTED.read_bytes())
    assert got["analyze_markdown"] == expected["analyze_markdown"]
    assert got["analyze_json"] == expected["analyze_json"]
    assert got["job_viewer_sha256"] == expected["job_viewer_sha256"]


def test_family_totals_block_by_block_gives_the_pinned_numbers(
    small_run: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 29: family_totals walks the families a block at a time on large runs; with one
    family per block the small run still analyses to the very same printed numbers."""
    from analysis.statistics import metrics

    monkeypatch.setattr(metrics, "_BLOCK_ROWS", 1)
    got = pin(small_run)
    expected = orjson.loads(EXPECTED.read_bytes())
    assert got["analyze_markdown"] == expected["analyze_markdown"]
    assert got["analyze_json"] == expected["analyze_json"]


if __name__ == "__main__":  # regenerate the expected file (see the module docstring)
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        _run(Path(tmp) / "run")
        EXPECTED.write_bytes(orjson.dumps(pin(Path(tmp) / "run"), option=orjson.OPT_INDENT_2))
        print(f"wrote {EXPECTED}", file=sys.stderr)
