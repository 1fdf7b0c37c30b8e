"""The affine suite through serve-sim on each wire format, side by side (issue 11).

For each of ``--wire systemone``, ``openai-decisions`` and ``openai-chat``: serve-sim in its
own process (no added latency), and one client process running the affine suite against it
at concurrency 64 (``jev-sim``: not priced). Figures per wire: exchanges (batched requests)
per second, HTTP requests per second (on openai-chat each question is its own completion),
and client CPU per exchange and per HTTP request; plus each wire's ratio to System One,
measured in the same run (the machine is shared: only ratios mean anything).

``run(tmp)`` is the section ``python -m benchmarks`` calls; ``one(tmp, wire)`` measures one
wire; ``python -m benchmarks.bench_wires [--quick]`` runs this section alone.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

import orjson

from benchmarks.processes import child, serve_sim

WIRES = ("systemone", "openai-decisions", "openai-chat")
CONCURRENCY = 64

_CLIENT = """
import time, orjson
from pathlib import Path
from harness import Limits, ModelSpec, RunSettings, load_suite, run
from runfolder import JsonlReader
suite = load_suite("affine", params={params!r})
model = ModelSpec("jev-sim", base_url={url!r}, wire={wire!r})
t0, c0 = time.perf_counter(), time.process_time()
# Every exchange sent: the request cache would answer a second pass.
result = run(suite, model, Limits(concurrency={concurrency}), folder=Path({folder!r}),
                   settings=RunSettings(cache="off"))
wall, cpu = time.perf_counter() - t0, time.process_time() - c0
http = sum(len(r["request"]["questions"]) if {wire!r} == "openai-chat" else 1
           for r in JsonlReader(Path({folder!r}) / "requests.jsonl"))
c = result.counters
print(orjson.dumps({{"wall_s": wall, "cpu_s": cpu, "exchanges": c.requests, "http": http,
                    "errors": c.errors, "jobs": c.jobs_done}}).decode())
"""


def one(tmp: Path, wire: str, params: dict[str, str] | None = None) -> dict[str, Any]:
    """The affine suite through ``serve-sim --wire wire``: wall, CPU, exchanges, HTTP requests."""
    with serve_sim(["--wire", wire]) as (url, _):
        code = _CLIENT.format(
            params=params or {},
            url=url,
            wire=wire,
            concurrency=CONCURRENCY,
            folder=str(tmp / f"wire-{wire}"),
        )
        return child(code)


def run(tmp: Path, quick: bool = False, params: dict[str, str] | None = None) -> dict[str, Any]:
    """Every wire, then the ratios to System One (``quick``: a quarter of the suite;
    ``params``: the affine suite's parameters, for a smaller one still)."""
    params = params or ({"per_operator": "4"} if quick else None)
    out: dict[str, Any] = {}
    measured = {wire: one(tmp, wire, params) for wire in WIRES}
    base = measured["systemone"]
    for wire, m in measured.items():
        key = wire.replace("-", "_")
        exchanges_per_s = m["exchanges"] / m["wall_s"]
        cpu_ms = m["cpu_s"] / m["exchanges"] * 1000
        out[f"wire_{key}_exchanges"] = m["exchanges"]
        out[f"wire_{key}_http_requests"] = m["http"]
        out[f"wire_{key}_errors"] = m["errors"]
        out[f"wire_{key}_exchanges_per_s"] = round(exchanges_per_s, 1)
        out[f"wire_{key}_http_requests_per_s"] = round(m["http"] / m["wall_s"], 1)
        out[f"wire_{key}_client_cpu_ms_per_exchange"] = round(cpu_ms, 3)
        out[f"wire_{key}_client_cpu_ms_per_http_request"] = round(m["cpu_s"] / m["http"] * 1000, 3)
        if wire != "systemone":
            out[f"wire_{key}_exchanges_per_s_over_systemone"] = round(
                exchanges_per_s / (base["exchanges"] / base["wall_s"]), 3
            )
            out[f"wire_{key}_cpu_per_exchange_over_systemone"] = round(
                cpu_ms / (base["cpu_s"] / base["exchanges"] * 1000), 3
            )
    return out


def main() -> None:
    """This section alone."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_wires", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="a quarter of the affine suite")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="nj-wires-") as name:
        print(orjson.dumps(run(Path(name), args.quick), option=orjson.OPT_INDENT_2).decode())


if __name__ == "__main__":
    main()
