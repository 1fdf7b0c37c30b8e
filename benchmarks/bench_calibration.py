"""The verdict test's calibration study (SIMULATED): which paired test holds its level.

A pool of sim runs of the affine suite at 128 families (``per_operator=32``) is made once
and cached (``--cache``): runs at the sim's default knobs, at heavier-tailed knobs (more
blunders and ten-unit slips), and at two larger ``confusion`` values (true differences).
Each run is kept as its per-family sums and counts of mape, nmae, within5 and lar per decoder x
condition. A comparison draws two distinct runs and a random subset of n families (the
same for both), and judges the 12 cells of one metric with each candidate test; a cell is
called when its p is below alpha, and the comparison family-wise when any cell's Holm p is.

Nulls: ``aa`` (two runs at the default knobs), ``aa-heavy`` (two runs at the heavier
tails), and ``spread``: equal means, different spreads, built by construction: side B's
per-family sums are moved to ``m_f + 3 (b_f - m_f)``, with ``m_f`` the pool's mean of family
f, so that B's mean is the pool's (as A's) and its spread three times A's (``--spread``
sets the factor; over every ordered pair of the pool's runs the transformed difference
averages exactly 0, and a leave-pair-out ``m_f`` moves the rates by under a point; but on
these skewed metrics about half of B's values fall below 0, or above 100% within 5%, where
no model can be: the table ``out_of_range`` prints). Two equal-mean nulls whose every value
a model could have (``benchmarks.calibration_nulls``): ``steady``, B the mean of k other
default runs (``--steady``, 9: B's spread 1/3 of A's, the ratio of spread x3), and
``erratic``, B one run whose every family value is moved to its nearer bound or twice as far
from it, with probability 1/2 each (the same mean, more spread). Power: a
default run against a ``confusion`` run, the share of comparisons calling the focus cell
(tree10 x arithmetic) in the true direction after Holm. ``--looks`` also measures the
sequential rule (alpha spent over looks at 1/4, 1/2, 3/4 and all of the families) with
the chosen test; ``--tests`` restricts the candidates (``--tests cluster_t --looks``
re-measures the rule alone in a few minutes); ``--tables A.json B.json`` prints the tables
of saved results (rows of the same null, metric and family count joined).

Candidates: the percentile bootstrap p, BCa, a plain sign-flip test, the cluster-robust t
(``cluster_t``), the Rademacher wild bootstrap-t (``wild_t``), and from
``analysis.statistics.skew_tests`` the pairs bootstrap-t, symmetric and equal-tailed
(``boot_t_sym``, ``boot_t_eq``), Hall's skewness-corrected t (``hall_t``) and the Mammen
wild bootstrap-t (``mammen_sym``, ``mammen_eq``); ``boot_t_max`` (``family_test``'s
``method="bootstrap_t"``) calls a cell only when both ``boot_t_sym`` and ``cluster_t`` do.
Issue 44's: ``flip_boot_t``, the intersection of the studentized sign-flip test (exact on
exchangeable pairs; Webb's weights where 2 / 2^F is above Holm's first step) and
``boot_t_sym`` (``analysis.statistics.flip_tests``); ``stepdown_t``, the max-t step-down
over the cells from the bootstrap-t's joint resamples in place of Holm, ``stepdown_max`` the
same floored by the Holm-adjusted t, and ``minp_max`` the min-P step-down floored alike
(``analysis.statistics.stepdown``). Each comparison's resamples are seeded from its draw,
so the draws do not depend on ``--tests``.

``python -m benchmarks.bench_calibration`` (``make calibration``) prints the tables; the
last line is JSON.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from analysis.statistics.bootstrap import ratio_replicates, resample_weights
from analysis.statistics.family_test import Method, paired_family_test
from analysis.statistics.flip_tests import flip_boot_t_p, flip_weights
from analysis.statistics.multiple import bootstrap_p_values, holm
from analysis.statistics.sequential import sequential_replay
from analysis.statistics.skew_tests import (
    Tails,
    bootstrap_t_p,
    bootstrap_t_replicates,
    hall_t_p,
    mammen_weights,
    two_sided_p,
    wild_mammen_p,
)
from analysis.statistics.stepdown import max_t_stepdown, min_p_stepdown
from benchmarks.calibration_intervals import share_interval
from benchmarks.calibration_nulls import (
    erratic_factors,
    erratic_values,
    other_runs,
    out_of_range_shares,
    spread_values,
    steady_values,
    upper_bound,
)

ARMS = {
    "default": {},
    "heavy": {"blunder": "0.03", "slip_ten": "0.02"},
    "conf13": {"confusion": "0.13"},
    "conf20": {"confusion": "0.2"},
}
METRICS = ("mape", "nmae", "within5", "lar")
FAMILIES = (8, 16, 32, 64, 128)
ALPHA = 0.05
TESTS = (
    "percentile", "bca", "signflip", "cluster_t", "wild_t",
    "boot_t_sym", "boot_t_eq", "hall_t", "mammen_sym", "mammen_eq", "boot_t_max",
    "flip_boot_t", "stepdown_t", "stepdown_max", "minp_max",
)  # fmt: skip
SCENARIOS = ("aa", "aa-heavy", "spread", "conf13", "conf20", "steady", "erratic")
# The verdict test (analysis.statistics.family_test's DEFAULT_METHOD) and the field's t:
# the tests whose family-wise interval is printed.
CHOSEN = "boot_t_max"
WITH_INTERVAL = (CHOSEN, "cluster_t", "flip_boot_t", "stepdown_t", "stepdown_max", "minp_max")
SPREAD = 3.0  # the spread null's factor (--spread)
# The sequential rule's p (--sequential-method): its rows' key suffix and column title.
SEQUENTIAL_KEYS = {"t": "", "bootstrap_t": "_boot_t_max"}
STEADY = 9  # the steady null's k (--steady): B's spread 1/3 of A's, the ratio of spread x3


def make_pool(arm: str, n_runs: int, cache: Path) -> dict[str, np.ndarray]:
    """The arm's runs as (runs, families, 3 metrics, D, C) sums and counts (cached)."""
    path = cache / f"pool_{arm}_{n_runs}.npz"
    if not path.exists():
        from analysis.statistics.metrics import family_totals
        from harness import ModelSpec, load_suite
        from simstudy.profile import design_for, outputs_of
        from simstudy.simulate import simulate

        suite = load_suite("affine", params={"per_operator": "32"})
        params = ModelSpec("sim", sim=ARMS[arm]).sim_params
        assert params is not None
        sums, counts = [], []
        for seed in range(n_runs):
            outputs = outputs_of(simulate(suite, replace(params, seed=1000 + seed)))
            totals = family_totals(outputs, design_for(outputs, "affine"))
            pooled = [totals.statistics.index(m) for m in METRICS]
            sums.append(totals.sums[:, pooled])
            counts.append(totals.counts[:, pooled])
            print(f"pool {arm}: run {seed + 1}/{n_runs}", file=sys.stderr, flush=True)
        cache.mkdir(parents=True, exist_ok=True)
        np.savez_compressed(path, sums=np.array(sums), counts=np.array(counts))
    data = np.load(path)
    return {"sums": data["sums"], "counts": data["counts"]}


def bca_p(d: np.ndarray, n: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """BCa p-value of "difference 0": the BCa level whose interval end sits at 0."""
    from scipy.stats import norm

    reps = ratio_replicates(d, n, weights)
    delta = d.sum(0) / n.sum(0)
    # Ties (families with no difference make many replicates equal) count half: mid-ranks.
    below = (reps < delta).mean(0) + 0.5 * (reps == delta).mean(0)
    z0 = norm.ppf(np.clip(below, 1e-6, 1 - 1e-6))
    # A cell with one family holding all its outputs has no jackknife: NaN, never called.
    with np.errstate(invalid="ignore", divide="ignore"):
        jack = (d.sum(0) - d) / (n.sum(0) - n)  # leave one family out, (F, K)
        dev = jack.mean(0) - jack
        spread = (dev**2).sum(0)
        skew = (dev**3).sum(0) / (6 * np.maximum(spread, 1e-300) ** 1.5)
    acc = np.where(spread > 0, skew, 0.0)
    q0 = (reps < 0).mean(0) + 0.5 * (reps == 0).mean(0)
    v = norm.ppf(np.clip(q0, 1e-6, 1 - 1e-6)) - z0
    u = v / (1 + acc * v)
    z_alpha = u - z0
    one_sided = norm.cdf(z_alpha)
    degenerate = np.all(reps == reps[:1], axis=0)  # every replicate equal: nothing to test
    one_sided = np.where(degenerate, 0.5, one_sided)
    return np.minimum(1.0, 2 * np.minimum(one_sided, 1 - one_sided))


def plain_signflip_p(d: np.ndarray, signs: np.ndarray) -> np.ndarray:
    """Unstudentized sign-flip p of "difference 0" (the sum of family differences)."""
    observed = np.abs(d.sum(0))
    reach = np.abs(signs @ d) >= observed * (1 - 1e-9)
    return (1 + reach.sum(0)) / (signs.shape[0] + 1)


def cluster_t_p(d: np.ndarray, n: np.ndarray) -> np.ndarray:
    """CR1 cluster-robust t with G-1 degrees of freedom (Inspect AI's ``ci``)."""
    from scipy.stats import t as student

    total = n.sum(0)
    delta = d.sum(0) / total
    g = (n > 0).sum(0)
    se = np.sqrt(g / (g - 1) * ((d - n * delta) ** 2).sum(0)) / total
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(se > 0, 2 * student.sf(np.abs(delta / se), g - 1), 1.0)


def p_values(test: str, d: np.ndarray, n: np.ndarray, seed: int) -> np.ndarray:
    """One candidate's p per column of (F, K) family difference sums and counts."""
    f = d.shape[0]
    if test == "percentile":
        return bootstrap_p_values(ratio_replicates(d, n, resample_weights(f, 999, seed)))
    if test == "bca":
        return bca_p(d, n, resample_weights(f, 999, seed))
    if test == "signflip":
        from analysis.statistics.family_test import sign_vectors

        return plain_signflip_p(d, sign_vectors(f, 999, seed))
    if test == "cluster_t":
        return cluster_t_p(d, n)
    if test == "boot_t_max":  # both must reject: the bootstrap-t never below Student's t
        weights = resample_weights(f, 999, _sym_seed(test, seed))
        return np.maximum(bootstrap_t_p(d, n, weights), cluster_t_p(d, n))
    if test == "flip_boot_t":  # both must reject: the flips (exact on A/A) and the bootstrap-t
        # The flips must reach Holm's first step over the cells (Webb's weights where not).
        flips = flip_weights(f, 999, seed, ALPHA / d.shape[1])
        return flip_boot_t_p(d, n, flips, resample_weights(f, 999, _sym_seed(test, seed)))
    if test.startswith("boot_t"):
        tails: Tails = "symmetric" if test == "boot_t_sym" else "equal"
        return bootstrap_t_p(d, n, resample_weights(f, 999, seed), tails)
    if test == "hall_t":
        return hall_t_p(d, n)
    if test.startswith("mammen"):
        tails = "symmetric" if test == "mammen_sym" else "equal"
        return wild_mammen_p(d, n, mammen_weights(f, 999, seed), tails)
    return paired_family_test(d, n, n_flips=999, seed=seed, interval=False, method="wild").p


def _sym_seed(test: str, seed: int) -> int:
    """boot_t_sym's seed from ``test``'s: the tests built on it share its resamples."""
    return seed - TESTS.index(test) + TESTS.index("boot_t_sym")


def judged(test: str, d: np.ndarray, n: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """One candidate's per-cell p and its family-wise adjusted p over the (F, K) columns:
    Holm's for the tests of one cell at a time, the max-t step-down's for ``stepdown_*`` and
    the min-P step-down's for ``minp_max`` (per cell, the bootstrap-t of the same
    resamples; ``stepdown_max`` and ``minp_max`` floored by the t,
    Holm-adjusted, as boot_t_max is by the t)."""
    if not test.startswith(("stepdown", "minp")):
        p = p_values(test, d, n, seed)
        return p, holm(p)
    weights = resample_weights(d.shape[0], 999, _sym_seed(test, seed))
    t, reps, testable = bootstrap_t_replicates(d, n, weights)
    p = two_sided_p(t, reps, "symmetric", testable)
    stepdown = min_p_stepdown if test.startswith("minp") else max_t_stepdown
    adjusted = stepdown(t, reps, testable)
    if test in ("stepdown_max", "minp_max"):
        t_p = cluster_t_p(d, n)
        p, adjusted = np.maximum(p, t_p), np.maximum(adjusted, holm(t_p))
    return p, adjusted


def _summary(row: dict[str, Any]) -> dict[str, Any]:
    """A row without its per-draw lists (the progress line)."""
    return {
        k: {kk: vv for kk, vv in v.items() if not kk.endswith("per_draw")}
        if isinstance(v, dict) else v
        for k, v in row.items()
        if k != "units" and not k.endswith("per_draw")
    }  # fmt: skip


def draw(
    pools: dict[str, dict[str, np.ndarray]], scenario: str, metric: int, n_fam: int,
    rng: np.random.Generator, spread: float = SPREAD, steady: int = STEADY,
) -> tuple[np.ndarray, np.ndarray, tuple[str, ...]]:  # fmt: skip
    """One comparison's (F, K) difference sums and counts under ``scenario``, and the runs
    it was made from ("arm:index"; draws that share one are not independent)."""
    base_arm = "heavy" if scenario == "aa-heavy" else "default"
    base = pools[base_arm]
    nulls = {"aa": "default", "aa-heavy": "heavy"}  # the rest of the nulls use default runs
    other_arm = nulls.get(scenario, "default" if scenario not in ARMS else scenario)
    other = pools[other_arm]
    i = int(rng.integers(len(base["sums"])))
    j = int(rng.integers(len(other["sums"])))
    while other_arm == base_arm and j == i:
        j = int(rng.integers(len(other["sums"])))
    fams = rng.choice(base["sums"].shape[1], size=n_fam, replace=False)
    a = base["sums"][i][fams, metric].reshape(n_fam, -1)
    b = other["sums"][j][fams, metric].reshape(n_fam, -1)
    n = base["counts"][i][fams, metric].reshape(n_fam, -1)
    runs_b = [j]
    if scenario == "spread":
        mean = other["sums"][:, fams, metric].reshape(len(other["sums"]), n_fam, -1).mean(0)
        b = spread_values(b, mean, spread)
    elif scenario == "steady":  # k other runs, none of them A's (the j above unused)
        runs = other_runs(rng, len(other["sums"]), i, steady)
        b = steady_values(other["sums"][runs][:, fams, metric].reshape(steady, n_fam, -1))
        runs_b = [int(r) for r in runs]
    elif scenario == "erratic":
        upper = upper_bound(metric, other["counts"][j][fams, metric].reshape(n_fam, -1))
        b = erratic_values(b, upper, erratic_factors(rng, b.shape))
    # The spread null's B also leans on the pool's mean of every run: not counted here.
    return b - a, n, (f"{base_arm}:{i}", *(f"{other_arm}:{r}" for r in runs_b))


def study(
    pools: dict[str, dict[str, np.ndarray]],
    replicates: int,
    looks: bool,
    scenarios: tuple[str, ...] = SCENARIOS,
    spread: float = SPREAD,
    tests: tuple[str, ...] = TESTS,
    families: tuple[int, ...] = FAMILIES,
    steady: int = STEADY,
    sequential_method: Method = "t",
) -> dict[str, Any]:
    """Every scenario x metric x family count x test: shares called (cell, Holm), power."""
    rng = np.random.default_rng(20260923)
    out: dict[str, Any] = {"calibration": [], "power": [], "sequential": []}
    key = SEQUENTIAL_KEYS[sequential_method]
    focus = 3 * 2 + 0  # tree10 (direct, tree2, tree4, tree10, digits, bits) x arithmetic
    for scenario in scenarios:
        for m, metric in enumerate(METRICS):
            for n_fam in families:
                # Per draw: cells called, any called after Holm, and the runs it was made of.
                cells: dict[str, list[int]] = {test: [] for test in tests}
                fw: dict[str, list[int]] = {test: [] for test in tests}
                units: list[tuple[str, ...]] = []
                seq_fw: list[int] = []
                hits = dict.fromkeys(tests, 0)
                seq_hits = 0
                seq_used = 0.0
                n_cells = 0
                # Power rows need fewer comparisons than the rates near alpha do.
                reps = replicates // 2 if scenario.startswith("conf") else replicates
                for _ in range(reps):
                    d, n, runs = draw(pools, scenario, m, n_fam, rng, spread, steady)
                    units.append(runs)
                    truth = np.sign(
                        pools[scenario]["sums"][:, :, m].reshape(-1, d.shape[1]).sum(0)
                        / pools[scenario]["counts"][:, :, m].reshape(-1, d.shape[1]).sum(0)
                        - pools["default"]["sums"][:, :, m].reshape(-1, d.shape[1]).sum(0)
                        / pools["default"]["counts"][:, :, m].reshape(-1, d.shape[1]).sum(0)
                    ) if scenario.startswith("conf") else None  # fmt: skip
                    n_cells += d.shape[1]
                    # One seed per comparison: the draws do not depend on which tests run.
                    seed = int(rng.integers(2**31))
                    for test in tests:
                        p, adjusted = judged(test, d, n, seed + TESTS.index(test))
                        cells[test].append(int((p < ALPHA).sum()))
                        fw[test].append(int((adjusted < ALPHA).any()))
                        if truth is not None:
                            delta = d.sum(0) / n.sum(0)
                            hits[test] += int(
                                adjusted[focus] < ALPHA and np.sign(delta[focus]) == truth[focus]
                            )
                    if looks:
                        called, right, used = sequential_once(
                            d, n, seed + 99, focus, sequential_method
                        )
                        seq_fw.append(called)
                        seq_used += used
                        if truth is not None:
                            seq_hits += int(right == truth[focus])
                name = {"spread": f"spread x{spread:g}", "steady": f"steady k={steady}"}.get(
                    scenario, scenario
                )
                row: dict[str, Any] = {"scenario": name, "metric": metric, "families": n_fam}
                if truth is None:
                    per_draw = np.full(reps, n_cells // reps)
                    for test in tests:
                        row[test] = {
                            "cell": sum(cells[test]) / n_cells,
                            "cell_ci": share_interval(np.array(cells[test]), per_draw, units),
                            "holm": sum(fw[test]) / reps,
                            "holm_ci": share_interval(np.array(fw[test]), np.ones(reps), units),
                            "cells_per_draw": cells[test],
                            "holm_per_draw": fw[test],
                        }
                    row["units"] = units
                    if looks:
                        row[f"sequential_holm{key}"] = sum(seq_fw) / reps
                        row[f"sequential_holm{key}_ci"] = share_interval(
                            np.array(seq_fw), np.ones(reps), units
                        )
                        row[f"sequential_holm{key}_per_draw"] = seq_fw
                        row[f"sequential_families_used{key}"] = seq_used / reps
                    out["calibration"].append(row)
                else:
                    for test in tests:
                        row[test] = hits[test] / reps
                    if looks:
                        row[f"sequential{key}"] = seq_hits / reps
                        row[f"sequential_families_used{key}"] = seq_used / reps
                    out["power"].append(row)
                print(orjson.dumps(_summary(row)).decode(), file=sys.stderr, flush=True)
    return out


def sequential_once(
    d: np.ndarray, n: np.ndarray, seed: int, focus: int, method: Method = "t"
) -> tuple[int, float, float]:
    """The sequential rule over 4 looks with ``method``'s p inside (its intervals and
    futility stay the t's): (any cell called, the focus cell's sign, the share of the
    families asked before every cell had stopped)."""
    path = sequential_replay(d, n, n_looks=4, alpha=ALPHA, n_flips=999, seed=seed, method=method)
    called = path.reason == "decided"
    return int(called.any()), float(path.sign[focus]), path.families_used / d.shape[0]


def tables(result: dict[str, Any]) -> str:
    """The study's JSON as the Markdown tables of docs/comparing.md (the tests it has)."""
    rows = result["calibration"] + result["power"]
    shown = [t for t in TESTS if any(t in row for row in rows)]
    # The sequential rule's columns: one per p measured inside it (cluster_t's first).
    rules = [
        (key, "" if not key else f", {key.lstrip('_')}")
        for key in SEQUENTIAL_KEYS.values()
        if any(f"sequential_holm{key}" in row or f"sequential{key}" in row for row in rows)
    ]
    lines = [
        "Share called, per cell / family-wise after Holm (%), with the 95% interval of each "
        f"share for {', '.join(t for t in WITH_INTERVAL if t in shown)}: Clopper-Pearson on the effective count, the "
        "draws' cells and shared runs counted as dependent (benchmarks.calibration_intervals):",
        "",
        "| null | metric | F | "
        + " | ".join(shown)
        + "".join(f" | sequential{title} (Holm)" for _, title in rules)
        + " |",
        "|" + " --- |" * (len(shown) + 3 + len(rules)),
    ]
    for row in result["calibration"]:
        cells = []
        for test in shown:
            r = row.get(test)
            text = "" if r is None else f"{100 * r['cell']:.1f} / {100 * r['holm']:.1f}"
            if test in WITH_INTERVAL and r is not None and "cell_ci" in r:
                text = " / ".join(
                    f"{100 * r[k]:.1f} [{100 * r[f'{k}_ci'][0]:.1f}, {100 * r[f'{k}_ci'][1]:.1f}]"
                    for k in ("cell", "holm")
                )
            elif test in WITH_INTERVAL and r is not None:  # saved before the cells had one
                lo, hi = r["holm_ci"]
                text += f" [{100 * lo:.1f}, {100 * hi:.1f}]"
            cells.append(text)
        for key, _ in rules:
            seq = row.get(f"sequential_holm{key}")
            ci = row.get(f"sequential_holm{key}_ci")
            text = "" if seq is None else f"{100 * seq:.1f}"
            cells.append(text if ci is None else f"{text} [{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]")
        lines.append(
            f"| {row['scenario']} | {row['metric']} | {row['families']} | "
            + " | ".join(cells)
            + " |"
        )
    lines += [
        "",
        "Power: share of comparisons calling the focus cell (tree10 x arithmetic) in the "
        "true direction after Holm (%):",
        "",
        "| alternative | metric | F | "
        + " | ".join(shown)
        + "".join(f" | sequential{title} | families asked" for _, title in rules)
        + " |",
        "|" + " --- |" * (len(shown) + 3 + 2 * len(rules)),
    ]
    for row in result["power"]:
        cells = ["" if t not in row else f"{100 * row[t]:.0f}" for t in shown]
        for key, _ in rules:
            seq, used = row.get(f"sequential{key}"), row.get(f"sequential_families_used{key}")
            cells += [
                "" if seq is None else f"{100 * seq:.0f}",
                "" if used is None else f"{100 * used:.0f}%",
            ]
        lines.append(
            f"| {row['scenario']} | {row['metric']} | {row['families']} | "
            + " | ".join(cells)
            + " |"
        )
    if result.get("out_of_range"):
        lines += ["", out_of_range_table(result["out_of_range"]).rstrip("\n")]
    return "\n".join(lines) + "\n"


def merge(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Saved results as one: rows of the same null, metric and family count joined (their
    tests side by side, as runs of other ``--tests`` on the same draws give)."""
    merged: dict[str, Any] = {"calibration": [], "power": [], "out_of_range": {}}
    for kind in ("calibration", "power"):
        rows: dict[tuple[str, str, int], dict[str, Any]] = {}
        for result in results:
            for row in result[kind]:
                rows.setdefault((row["scenario"], row["metric"], row["families"]), {}).update(row)
        merged[kind] = list(rows.values())
    for result in results:
        merged["out_of_range"].update(result.get("out_of_range", {}))
    return merged


def out_of_range_table(shares: dict[str, list[float]]) -> str:
    """Each null's share of B's family values no model could have, per metric (%)."""
    lines = [
        "Share of side B's family values out of range (below 0; within-5% above 100% per "
        "output), over every default run x family x cell (%):",
        "",
        "| null | " + " | ".join(METRICS) + " |",
        "|" + " --- |" * (len(METRICS) + 1),
    ]
    for null, row in shares.items():
        lines.append(f"| {null} | " + " | ".join(f"{100 * x:.1f}" for x in row) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Make or load the pools, run the study, print the tables and one JSON line."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_calibration")
    parser.add_argument(
        "--cache", type=Path, default=Path(tempfile.gettempdir()) / "numericjev-calibration"
    )
    parser.add_argument("--runs", type=int, default=40, help="sim runs per null arm (default 40)")
    parser.add_argument("--replicates", type=int, default=400)
    parser.add_argument("--looks", action="store_true", help="also the sequential rule")
    parser.add_argument(
        "--sequential-method",
        choices=sorted(SEQUENTIAL_KEYS),
        default="t",
        help="the p inside the sequential rule (default t, cluster_t; bootstrap_t is boot_t_max)",
    )
    parser.add_argument("--scenarios", default=",".join(SCENARIOS), help="which rows")
    parser.add_argument("--tests", default=",".join(TESTS), help="which candidates")
    parser.add_argument(
        "--families", default=",".join(map(str, FAMILIES)), help="which family counts"
    )
    parser.add_argument("--spread", type=float, default=SPREAD, help="the spread null's factor")
    parser.add_argument(
        "--steady", type=int, default=STEADY, help="the steady null's k: B the mean of k runs"
    )
    parser.add_argument(
        "--tables", type=Path, nargs="+", help="print the tables of saved JSON results, no study"
    )
    args = parser.parse_args(argv)
    if args.tables:
        print(tables(merge([orjson.loads(p.read_bytes().splitlines()[-1]) for p in args.tables])),
              end="")  # fmt: skip
        return 0
    t0 = time.perf_counter()
    scenarios = tuple(args.scenarios.split(","))
    unknown = set(scenarios) - set(SCENARIOS)
    if unknown:
        parser.error(
            f"unknown --scenarios {','.join(sorted(unknown))}: choose from {','.join(SCENARIOS)}"
        )
    if not 1 <= args.steady < args.runs:
        parser.error(f"--steady {args.steady}: B averages k of the other runs, 1 <= k < --runs")
    wanted = {"default", "heavy", *(s for s in scenarios if s in ARMS)}
    pools = {
        arm: make_pool(arm, args.runs if arm in ("default", "heavy") else args.runs * 3 // 5,
                       args.cache)
        for arm in ARMS if arm in wanted
    }  # fmt: skip
    tests = tuple(args.tests.split(","))
    families = tuple(int(f) for f in args.families.split(","))
    spreads = tuple(sorted({1.5, SPREAD, args.spread}))
    default = pools["default"]
    shares = out_of_range_shares(default["sums"], default["counts"], spreads, args.steady)
    print(out_of_range_table(shares), file=sys.stderr)
    result = study(
        pools, args.replicates, args.looks, scenarios, args.spread, tests, families, args.steady,
        args.sequential_method,
    )  # fmt: skip
    result["out_of_range"] = shares
    result["seconds"] = time.perf_counter() - t0
    result["replicates"] = args.replicates
    print(tables(result), file=sys.stderr)
    print(orjson.dumps(result).decode())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
