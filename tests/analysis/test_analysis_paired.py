"""Paired differences on common units (issue 9): diff of a complete run against a partial
one, and differences against direct when some decoders' outputs failed.

Each test checks the tables against an independent computation straight from the
outputs.jsonl records (exact decimals, plain Python), on the units ok on both sides only.
"""

from __future__ import annotations

import tempfile
from collections import defaultdict
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest
from analysis_runs import CONDITIONS, DECODERS, DOMAINS, ORDERS, SKIP, RunFactory, exact
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis import (
    STATISTICS,
    analyze_run,
    diff_runs,
    load_run,
    paired_family_test,
    percentile_interval,
    resample_weights,
)
from analysis.cli import main

MAPE, NMAE, ORDER = (STATISTICS.index(s) for s in ("mape", "nmae", "ordering_gap"))
FAMILIES = range(8)


def noisy(family: int, domain: str, condition: str, order: str, decoder: str) -> int:
    """Errors that grow with the family, so dropping families moves an unpaired mean."""
    z = exact(family, domain, condition, order, decoder)
    return z + (family % 4) * (1 if decoder == "direct" else 2) + (order == "reversed")


def records(run: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in (run / "outputs.jsonl").read_bytes().splitlines()]


def errors(record: dict[str, Any]) -> tuple[float, float]:
    """(APE %, NAE % of U−L) of one ok output, computed here from its decimal strings."""
    target, value = Decimal(record["target"]), Decimal(record["value"])
    width = Decimal(record["eps"]) * record["N"]
    return float(100 * abs(value - target) / abs(target)), float(100 * abs(value - target) / width)


def ok_by_key(run: Path) -> dict[tuple[str, str], dict[str, Any]]:
    return {(r["job"], r["decoder"]): r for r in records(run) if r["status"] == "ok"}


def mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


# --- diff: a complete run against a partial one --------------------------------------------


def partial(family: int, domain: str, condition: str, order: str, decoder: str) -> int | str:
    """Run B stopped early: only the first three families (the small errors) were written,
    and one output of a fourth family failed."""
    if family >= 4 or (family == 3 and decoder != "tree2"):
        return SKIP
    return noisy(family, domain, condition, order, decoder)


def test_diff_against_a_partial_run_with_identical_shared_outputs_is_zero(
    runs: RunFactory,
) -> None:
    a = runs.affine("a", families=FAMILIES, predict=noisy)
    b = runs.affine("b", families=FAMILIES, predict=partial)
    d = diff_runs(load_run(a), load_run(b), n_boot=400, seed=5)
    shown = np.isfinite(d.delta)
    assert shown.any()
    assert np.all(d.delta[shown] == 0.0)  # exactly: the same outputs on both sides
    assert np.all(d.delta_lo[shown] == 0.0) and np.all(d.delta_hi[shown] == 0.0)
    assert d.n_changed.sum() == 0
    # Averaged each over its own outputs, B would look better: the bias the pairing removes.
    assert np.nanmax(np.abs(d.unpaired_b - d.unpaired_a)[MAPE]) > 1.0
    # The table's numbers equal an independent mean over the common (job, decoder) outputs.
    ka, kb = ok_by_key(a), ok_by_key(b)
    common = ka.keys() & kb.keys()
    assert d.n_compared.sum() == len(common) == 3 * 4 * 2 * 2 * 6 + 4 * 2 * 2
    for i, decoder in enumerate(d.design.decoders):
        for c, condition in enumerate(d.design.conditions):
            keys = [k for k in common if k[1] == decoder and ka[k]["condition"] == condition]
            assert d.n_compared[i, c] == len(keys) == d.n_paired[MAPE, i, c]
            for s, at in ((MAPE, 0), (NMAE, 1)):
                assert d.point_a[s, i, c] == pytest.approx(mean([errors(ka[k])[at] for k in keys]))
                assert d.point_b[s, i, c] == pytest.approx(mean([errors(kb[k])[at] for k in keys]))


def worse_and_partial(family: int, domain: str, condition: str, order: str, decoder: str):
    """B changed tree10's arithmetic answers and is missing families 5 to 7."""
    if family >= 5:
        return SKIP
    z = noisy(family, domain, condition, order, decoder)
    return z + 3 if (decoder, condition) == ("tree10", "arithmetic") else z


def test_diff_deltas_equal_an_independent_paired_computation(runs: RunFactory) -> None:
    a = runs.affine("a", families=FAMILIES, predict=noisy)
    b = runs.affine("b", families=FAMILIES, predict=worse_and_partial)
    d = diff_runs(load_run(a), load_run(b), n_boot=300, seed=2)
    ka, kb = ok_by_key(a), ok_by_key(b)
    common = sorted(ka.keys() & kb.keys())
    families = tuple(str(f) for f in FAMILIES)
    t, arith = d.design.decoders.index("tree10"), d.design.conditions.index("arithmetic")
    keys = [k for k in common if k[1] == "tree10" and ka[k]["condition"] == "arithmetic"]
    # Per family: sum of (APE_B − APE_A) and the count of common outputs.
    sums, counts = np.zeros(len(families)), np.zeros(len(families))
    for k in keys:
        f = families.index(str(ka[k]["family"]))
        sums[f] += errors(kb[k])[0] - errors(ka[k])[0]
        counts[f] += 1
    assert d.delta[MAPE, t, arith] == pytest.approx(sums.sum() / counts.sum())
    assert d.delta[MAPE, t, arith] > 0
    # The interval is compare's test inverted on those same per-family sums.
    test = paired_family_test(sums, counts, alpha=0.05, n_flips=300, seed=2)
    assert (d.delta_lo[MAPE, t, arith], d.delta_hi[MAPE, t, arith]) == pytest.approx(
        (test.lo[0], test.hi[0])
    )


def test_diff_tables_say_n_and_label_the_unpaired_means(
    runs: RunFactory, capsys: pytest.CaptureFixture
) -> None:
    a = runs.affine("a", families=FAMILIES, predict=noisy)
    b = runs.affine("b", families=FAMILIES, predict=partial)
    assert main(["diff", str(a), str(b), "--bootstrap", "100"]) == 0
    out = capsys.readouterr().out
    assert "| Decoder       | Condition  |   n | MAPE A |" in out
    assert "### Unpaired means, each run over its own ok outputs" in out
    assert main(["diff", str(a), str(b), "--json", "--bootstrap", "100"]) == 0
    cell = orjson.loads(capsys.readouterr().out)["cells"][0]
    assert cell["mape"]["delta"] == 0.0 and cell["mape"]["n"] == cell["n_compared"] == 24
    assert cell["mape"]["a"] != cell["mape"]["a_unpaired"]
    assert (cell["n_ok_a"], cell["n_ok_b"]) == (64, 24)
    # Identical complete runs: nothing unpaired to show.
    assert main(["diff", str(a), str(a), "--bootstrap", "0"]) == 0
    assert "Unpaired means" not in capsys.readouterr().out


# --- analyze: differences against direct with failed deep-tree outputs ---------------------


def tree2_fails_where_direct_errs(
    family: int, domain: str, condition: str, order: str, decoder: str
) -> int | None:
    """tree2 (the deepest tree) fails on the jobs of the families where direct errs most."""
    if decoder == "tree2" and family % 4 >= 2 and domain != "x10000":
        return None
    return noisy(family, domain, condition, order, decoder)


def test_vs_direct_is_over_the_jobs_where_both_are_ok(runs: RunFactory) -> None:
    run = runs.affine("r", families=FAMILIES, predict=tree2_fails_where_direct_errs)
    a = analyze_run(load_run(run), n_boot=400, seed=8)
    b, design = a.bootstrap, a.design
    by_job: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
    for r in records(run):
        if r["status"] == "ok":
            by_job[r["job"]][r["decoder"]] = r
    families = a.metrics.totals.families
    weights = resample_weights(len(families), 400, 8)
    for d, decoder in enumerate(design.decoders):
        for c, condition in enumerate(design.conditions):
            jobs = [
                j
                for j, got in by_job.items()
                if decoder in got and "direct" in got and got["direct"]["condition"] == condition
            ]
            assert b.n_paired[MAPE, d, c] == len(jobs)
            for s, at in ((MAPE, 0), (NMAE, 1)):
                expected = mean(
                    [errors(by_job[j][decoder])[at] - errors(by_job[j]["direct"])[at] for j in jobs]
                )
                assert b.diff[s, d, c] == pytest.approx(expected, abs=1e-9)
            if decoder != "tree2" or condition != "arithmetic":
                continue
            sums, counts = np.zeros(len(families)), np.zeros(len(families))
            for j in jobs:
                f = families.index(str(by_job[j]["direct"]["family"]))
                sums[f] += errors(by_job[j][decoder])[0] - errors(by_job[j]["direct"])[0]
                counts[f] += 1
            with np.errstate(invalid="ignore"):
                lo, hi = percentile_interval(((weights @ sums) / (weights @ counts))[:, None])
            assert (b.diff_lo[MAPE, d, c], b.diff_hi[MAPE, d, c]) == pytest.approx((lo[0], hi[0]))
    # The failures are not decoder-neutral: each side over its own outputs would differ.
    t2, arith = design.decoders.index("tree2"), design.conditions.index("arithmetic")
    unpaired = a.metrics.point[MAPE, t2, arith] - a.metrics.point[MAPE, 0, arith]
    assert abs(unpaired - b.diff[MAPE, t2, arith]) > 0.25
    assert b.n_paired[MAPE, t2, arith] < a.metrics.n_ok[0, arith]


def test_paired_table_states_n_per_condition(
    runs: RunFactory, capsys: pytest.CaptureFixture
) -> None:
    run = runs.affine("r", families=FAMILIES, predict=tree2_fails_where_direct_errs)
    assert main(["analyze", str(run), "--bootstrap", "100"]) == 0
    out = capsys.readouterr().out
    section = out[out.index("### Paired differences vs direct") :]
    row = next(line for line in section.splitlines() if line.startswith("| Tree (K=2)"))
    # 8 families × 4 domains × 2 orders = 64 jobs per condition; tree2 failed on 4 × 3 × 2 × 2.
    assert [c.strip() for c in row.strip("|").split("|")][-2:] == ["40", "40"]
    assert "n counts the jobs where both the decoder and direct have an ok output" in section


OUTPUT_KEYS = st.tuples(
    st.integers(0, 5),
    st.sampled_from(tuple(DOMAINS)),
    st.sampled_from(CONDITIONS),
    st.sampled_from(ORDERS),
    st.sampled_from(DECODERS),
)


@settings(max_examples=20, deadline=None)
@given(st.sets(OUTPUT_KEYS, max_size=60), st.booleans())
def test_vs_direct_equals_naive_paired_means_for_any_failures(
    lost: set[tuple[int, str, str, str, str]], missing: bool
) -> None:
    def predict(family: int, domain: str, condition: str, order: str, decoder: str):
        if (family, domain, condition, order, decoder) in lost:
            return SKIP if missing else None
        return noisy(family, domain, condition, order, decoder)

    with tempfile.TemporaryDirectory() as tmp:
        run = RunFactory(Path(tmp)).affine("p", families=range(6), predict=predict)
        a = analyze_run(load_run(run), n_boot=0)
        ok = ok_by_key(run)
    b = a.bootstrap
    for d, decoder in enumerate(a.design.decoders):
        for c, condition in enumerate(a.design.conditions):
            both = [
                job
                for (job, dec), r in ok.items()
                if dec == decoder and r["condition"] == condition and (job, "direct") in ok
            ]
            assert b.n_paired[NMAE, d, c] == len(both)
            expected = mean([errors(ok[j, decoder])[1] - errors(ok[j, "direct"])[1] for j in both])
            assert b.diff[NMAE, d, c] == pytest.approx(expected, abs=1e-9, nan_ok=True)
            # Ordering gap: a case counts when both orders of it are ok for both decoders.
            asc = [j for j in both if j.endswith(f"/{condition}/ascending/r0")]
            pairs = [(j, j.replace("/ascending/", "/reversed/")) for j in asc]
            pairs = [(i, j) for i, j in pairs if j in both]

            def gap(dec: str, i: str, j: str) -> float:
                first, second = ok[i, dec], ok[j, dec]
                width = Decimal(first["eps"]) * first["N"]
                spread = abs(Decimal(first["value"]) - Decimal(second["value"]))
                return float(100 * spread / width)

            assert b.n_paired[ORDER, d, c] == len(pairs)
            expected = mean([gap(decoder, i, j) - gap("direct", i, j) for i, j in pairs])
            assert b.diff[ORDER, d, c] == pytest.approx(expected, abs=1e-9, nan_ok=True)
