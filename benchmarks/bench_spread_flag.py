"""How often the outside-the-promise flag marks each null's cells (SIMULATED; issue 44 item 2).

From the calibration study's cached pool of default sim runs (``bench_calibration
--cache``), for aa, steady k=2, steady k=9 and erratic, per metric and family count: the
share of cells whose spread ratio (the two sides' standard deviations of family means, larger
over smaller) reaches ``SPREAD_FLAG``,
and of the cells the default verdict test calls (p < 0.05, uncorrected: the false calls,
every null here having equal means) the share flagged. Issue 44 item 2's candidate rule; it
measured too blunt to ship (docs/comparing.md): the families' own spread of difficulty,
shared by both sides, swamps the difference in the models' steadiness.

``python -m benchmarks.bench_spread_flag --cache DIR`` prints one table.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from analysis.statistics.family_test import family_p_values
from benchmarks.calibration_nulls import (
    erratic_factors,
    erratic_values,
    other_runs,
    steady_values,
    upper_bound,
)

METRICS = ("mape", "nmae", "within5", "lar")
SPREAD_FLAG = 2.0  # the candidate rule's threshold


def spread_ratio(base_sums: np.ndarray, other_sums: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Per column of (F, K) family sums over the same counts: the larger side's standard
    deviation of family means over the smaller's (NaN with no spread)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        a, b = base_sums / counts, other_sums / counts
        sa, sb = np.nanstd(a, axis=0, ddof=1), np.nanstd(b, axis=0, ddof=1)
        return np.maximum(sa, sb) / np.minimum(sa, sb)


NULLS = ("aa", "steady k=2", "steady k=9", "erratic")


def sides(
    pool: dict[str, np.ndarray], null: str, m: int, n_fam: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One comparison's (F, K) sums of A and B and their counts under ``null``."""
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
    return a, b, n


def main(argv: list[str] | None = None) -> int:
    """Print the flag's rates per null, metric and family count."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_spread_flag")
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--replicates", type=int, default=100)
    parser.add_argument("--families", default="16,64")
    parser.add_argument("--flips", type=int, default=999)
    args = parser.parse_args(argv)
    data = np.load(args.cache / f"pool_default_{args.runs}.npz")
    pool = {"sums": data["sums"], "counts": data["counts"]}
    rng = np.random.default_rng(20261205)
    print(f"flag: spread ratio >= {SPREAD_FLAG:g}; {args.replicates} comparisons per row")
    print("| null | metric | families | cells flagged % | false calls | of them flagged % |")
    print("| --- | --- | --- | --- | --- | --- |")
    for null in NULLS:
        for m, metric in enumerate(METRICS):
            for n_fam in (int(x) for x in args.families.split(",")):
                flagged = cells = calls = calls_flagged = 0
                for _ in range(args.replicates):
                    a, b, n = sides(pool, null, m, n_fam, rng)
                    ratio = spread_ratio(a, b, n)
                    p = family_p_values(b - a, n, 0.0, args.flips, int(rng.integers(2**31)))
                    flag = ratio >= SPREAD_FLAG
                    flagged += int(flag.sum())
                    cells += flag.size
                    called = p < 0.05
                    calls += int(called.sum())
                    calls_flagged += int((called & flag).sum())
                share = f"{100 * calls_flagged / calls:.0f}" if calls else ""
                print(
                    f"| {null} | {metric} | {n_fam} | {100 * flagged / cells:.1f} | "
                    f"{calls} of {cells} | {share} |",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
