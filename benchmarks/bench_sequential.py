"""The sequential rule replayed on a finished comparison (SIMULATED when its runs are).

``python -m benchmarks.bench_sequential DIR [--orders N]`` takes a comparison folder whose
cells ran in full, puts its families in N seeded random orders, and for each order replays
``analysis.statistics.sequential.sequential_replay`` (``--looks`` looks, alpha spent
O'Brien-Fleming-type or Hwang-Shih-DeCani with ``--gamma``, Holm within each look over the
cells that can be called, futility below 5% conditional power): at which look each cell
stopped, the share of the comparison's requests asked by then (counted per family from
both runs' ``requests.jsonl``), and whether the verdicts agree with the full comparison's.
``compare --sequential`` asks the families so; this measures the rule over many orders.
The last line is JSON.
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

import numpy as np
import orjson

from analysis.loading.comparison import load_comparison_runs
from analysis.loading.outputs import family_sort_key
from analysis.statistics.comparison import compare_runs
from analysis.statistics.sequential import sequential_replay


def requests_per_family(run_dir: Path, families: tuple[str, ...]) -> np.ndarray:
    """Requests sent per family (the job id's second part, ``affine/f12/...``)."""
    counted: Counter[str] = Counter()
    with (run_dir / "requests.jsonl").open("rb") as lines:
        for line in lines:
            counted[orjson.loads(line)["job"].split("/")[1]] += 1
    return np.array([counted.get(f, counted.get(f"f{f}", 0)) for f in families], np.float64)


def main(argv: list[str] | None = None) -> int:
    """Replay the rule over ``--orders`` family orders and print what it saved."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_sequential")
    parser.add_argument("folder", type=Path)
    parser.add_argument("--orders", type=int, default=20)
    parser.add_argument("--looks", type=int, default=4, help="looks (equal shares)")
    parser.add_argument(
        "--gamma", type=float, default=None, help="Hwang-Shih-DeCani spending (default: OBF-type)"
    )
    parser.add_argument("--futility", type=float, default=0.05, help="conditional power floor")
    parser.add_argument("--futility-from", type=float, default=0.25, help="share of families")
    args = parser.parse_args(argv)
    c = compare_runs(load_comparison_runs(args.folder), n_boot=9_999)
    s = c.suites[0]
    # The comparison's own family axis (as ``compare_runs`` builds it).
    families = tuple(
        sorted({f for r in s.runs for f in r.outputs.family_names}, key=family_sort_key)
    )
    cost = sum(requests_per_family(r.manifest.run_dir, families) for r in s.runs)
    full = np.array([{"worse": 1, "better": -1}.get(v or "", 0) for v in s.verdicts[0].ravel()])
    lower = c.lower_is_better
    rng = np.random.default_rng(20260923)
    shares, agree, looks = [], [], Counter()
    for _ in range(args.orders):
        order = rng.permutation(len(families))
        diffs = s.family_diffs[0][order].reshape(len(families), -1)
        counts = s.family_counts[0][order].reshape(len(families), -1)
        path = sequential_replay(
            diffs,
            counts,
            n_looks=args.looks,
            gamma=args.gamma,
            seed=int(rng.integers(2**31)),
            futility=args.futility,
            futility_from=args.futility_from,
        )
        verdict = path.sign * (1 if lower else -1)  # +1 worse, as ``full``
        shares.append(float(cost[order][: path.families_used].sum() / cost.sum()))
        agree.append(float(np.mean(verdict == full)))
        looks.update(f"{r}@{k}" for r, k in zip(path.reason, path.stopped_at, strict=True))
    result = {
        "folder": str(args.folder),
        "families": len(families),
        "requests_full": int(cost.sum()),
        "share_of_requests": {"mean": float(np.mean(shares)), "max": float(np.max(shares))},
        "verdict_agreement": {"mean": float(np.mean(agree)), "min": float(np.min(agree))},
        "stops": dict(sorted(looks.items())),
        "orders": args.orders,
        "futility": [args.futility, args.futility_from],
    }
    print(orjson.dumps(result).decode())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
