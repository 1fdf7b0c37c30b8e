"""The probe's time estimate beside the real run, through serve-sim on loopback (issue 43).

For ``--wire systemone`` and ``openai-chat``: serve-sim in its own process (no added
latency), ``numericjev probe`` against it (its estimate of the whole suite at concurrency 64), then the
suite run for real in a fresh process at the same concurrency (``run``: the request
cache off, and no decoders' check before the first request, as the estimate has none). Figures per wire: the estimate,
the real wall time and their ratio (real over estimated: the goal is within 2x either way).
The machine is shared: both are taken under the same load, one right after the other.

``run(tmp, quick, params)`` is the section ``python -m benchmarks`` calls;
``python -m benchmarks.bench_probe [--quick]`` runs this section alone.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import orjson

from benchmarks.processes import ROOT, child, serve_sim

WIRES = ("systemone", "openai-chat")
CONCURRENCY = 64

_RUN = """
import time, orjson
from pathlib import Path
from harness import Limits, ModelSpec, RunSettings, load_suite, run
suite = load_suite("affine", params={params!r})
model = ModelSpec("jev-sim", base_url={url!r}, wire={wire!r})
t0 = time.perf_counter()
result = run(suite, model, Limits(concurrency={concurrency}), folder=Path({folder!r}),
             settings=RunSettings(cache="off"))
print(orjson.dumps({{"wall_s": time.perf_counter() - t0,
                    "requests": result.counters.requests}}).decode())
"""


def estimate(url: str, wire: str, params: dict[str, str]) -> float:
    """The estimate ``numericjev probe`` prints for the suite at ``CONCURRENCY`` (seconds)."""
    options = [arg for key, value in params.items() for arg in ("--param", f"{key}={value}")]
    command = [sys.executable, "-m", "harness.cli", "probe", "--model", "jev-sim", "--wire",
               wire, "--base-url", url, "--cache", "off", "--concurrency", str(CONCURRENCY),
               *options]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, check=True, cwd=ROOT)
    found = re.search(r"about ([\d,.]+) s at concurrency", done.stdout)
    assert found, done.stdout
    return float(found.group(1).replace(",", ""))


def run(tmp: Path, quick: bool = False, params: dict[str, str] | None = None) -> dict[str, Any]:
    """Each wire: the probe's estimate, the real run, real over estimated."""
    params = params or ({"per_operator": "4"} if quick else {})
    out: dict[str, Any] = {}
    for wire in WIRES:
        with serve_sim(["--wire", wire]) as (url, _):
            guess = estimate(url, wire, params)
            code = _RUN.format(params=params, url=url, wire=wire, concurrency=CONCURRENCY,
                               folder=str(tmp / f"probe-{wire}"))  # fmt: skip
            real = child(code)
        key = wire.replace("-", "_")
        out[f"probe_{key}_estimate_s"] = round(guess, 2)
        out[f"probe_{key}_real_s"] = round(real["wall_s"], 2)
        out[f"probe_{key}_real_over_estimate"] = round(real["wall_s"] / max(guess, 1e-9), 2)
    return out


def main() -> None:
    """This section alone."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_probe", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="a quarter of the affine suite")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="nj-probe-") as name:
        print(orjson.dumps(run(Path(name), args.quick), option=orjson.OPT_INDENT_2).decode())


if __name__ == "__main__":
    main()
