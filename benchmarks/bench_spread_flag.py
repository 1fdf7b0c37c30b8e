"""How often the outside-the-promise flag marks each null's cells (SIMULATED; issue 44 item 2).

From the calibration study's cached pools of sim runs (``bench_calibration --cache``), for
aa, steady k=2, steady k=9 and erratic, per metric and family count, at each threshold of
the spread ratio (``analysis.statistics.promise.spread_ratio``: the two sides' standard
deviations of family means, larger over smaller): the share of all cells whose ratio reaches
it, and the share of the cells the default verdict test calls (p < 0.05, uncorrected: the
false calls, every null here having equal means) that it marks. With ``--power``, the same
for conf20 (a default run against a ``confusion=0.2`` run): the share of the focus cell's
right calls (tree10 x arithmetic, as bench_calibration's power rows) that it marks, which a
flag should leave alone.

``python -m benchmarks.bench_spread_flag --cache DIR [--thresholds 2,3,4] [--power]``
prints one table.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from analysis.statistics.family_test import family_p_values
from analysis.statistics.promise import spread_ratio
from benchmarks.calibration_nulls import (
    erratic_factors,
    erratic_values,
    other_runs,
    steady_values,
    upper_bound,
)

METRICS = ("mape", "nmae", "within5", "lar")
NULLS = ("aa", "steady k=2", "steady k=9", "erratic")
FOCUS = 3 * 2 + 0  # tree10 (direct, tree2, tree4, tree10, digits, bits) x arithmetic


def sides(
    pools: dict[str, dict[str, np.ndarray]],
    null: str,
    m: int,
    n_fam: int,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One comparison's (F, K) sums of A and B and their counts under ``null``."""
    pool = pools["default"]
    runs = len(pool["sums"])
    i, j = (int(x) for x in rng.choice(runs, size=2, replace=False))
    fams = rng.choice(pool["sums"].shape[1], size=n_fam, replace=False)
    a = pool["sums"][i][fams, m].reshape(n_fam, -1)
    n = pool["counts"][i][fams, m].reshape(n_fam, -1)
    b = pool["sums"][j][fams, m].reshape(n_fam, -1)
    if null.startswith("steady"):
        k = int(null.split("=")[1])
        picks = other_runs(rng, runs, i, k)
        b = steady_values(pool["sums"][picks][:, fams, m].reshape(k, n_fam, -1))
    elif null == "erratic":
        b = erratic_values(b, upper_bound(m, n), erratic_factors(rng, b.shape))
    elif null == "conf20":
        other = pools["conf20"]
        j = int(rng.integers(len(other["sums"])))
        b = other["sums"][j][fams, m].reshape(n_fam, -1)
        # Paired over the units ok on both sides, as compare is: the smaller count.
        n = np.minimum(n, other["counts"][j][fams, m].reshape(n_fam, -1))
    return a, b, n


def truth(pools: dict[str, dict[str, np.ndarray]], m: int) -> float:
    """The sign of conf20's difference from the default in the focus cell, over the pools."""
    cells = int(np.prod(pools["default"]["sums"].shape[3:]))
    mean = {
        arm: pool["sums"][:, :, m].reshape(-1, cells)[:, FOCUS].sum()
        / pool["counts"][:, :, m].reshape(-1, cells)[:, FOCUS].sum()
        for arm, pool in pools.items()
    }
    return float(np.sign(mean["conf20"] - mean["default"]))


def main(argv: list[str] | None = None) -> int:
    """Print the flag's rates per null, metric, family count and threshold."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_spread_flag")
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--replicates", type=int, default=100)
    parser.add_argument("--families", default="16,64")
    parser.add_argument("--thresholds", default="2,3,4")
    parser.add_argument("--flips", type=int, default=999)
    parser.add_argument("--power", action="store_true", help="add conf20 (pool_conf20_24)")
    args = parser.parse_args(argv)
    pools = {}
    for arm, runs in (("default", args.runs), *((("conf20", 24),) if args.power else ())):
        data = np.load(args.cache / f"pool_{arm}_{runs}.npz")
        pools[arm] = {"sums": data["sums"], "counts": data["counts"]}
    thresholds = [float(x) for x in args.thresholds.split(",")]
    rng = np.random.default_rng(20261205)
    heads = " | ".join(f"≥{t:g}: cells % / calls %" for t in thresholds)
    print(f"spread-ratio flag; {args.replicates} comparisons per row (SIMULATED)")
    print(f"| null | metric | families | calls (p < 0.05) | {heads} |")
    print("| --- | --- | --- | --- |" + " --- |" * len(thresholds))
    for null in (*NULLS, *(("conf20",) if args.power else ())):
        for m, metric in enumerate(METRICS):
            for n_fam in (int(x) for x in args.families.split(",")):
                flagged = np.zeros(len(thresholds), np.int64)
                calls_flagged = np.zeros(len(thresholds), np.int64)
                cells = calls = 0
                for _ in range(args.replicates):
                    a, b, n = sides(pools, null, m, n_fam, rng)
                    ratio = np.nan_to_num(spread_ratio(a, b, n), nan=0.0)
                    p = family_p_values(b - a, n, 0.0, args.flips, int(rng.integers(2**31)))
                    called = p < 0.05
                    if null == "conf20":  # the focus cell's calls in the true direction
                        right = np.sign((b - a).sum(0)[FOCUS]) == truth(pools, m)
                        called = np.zeros_like(called)
                        called[FOCUS] = p[FOCUS] < 0.05 and right
                    cells += ratio.size
                    calls += int(called.sum())
                    for t, threshold in enumerate(thresholds):
                        flag = ratio >= threshold
                        flagged[t] += int(flag.sum())
                        calls_flagged[t] += int((called & flag).sum())
                shares = " | ".join(
                    f"{100 * f / cells:.1f} / " + (f"{100 * c / calls:.0f}" if calls else "—")
                    for f, c in zip(flagged, calls_flagged, strict=True)
                )
                print(
                    f"| {null} | {metric} | {n_fam} | {calls} of {cells} | {shares} |",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
