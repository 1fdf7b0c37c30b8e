"""Metrics against hand-computed tables and a brute-force model."""

from __future__ import annotations

import math
import tempfile
from fractions import Fraction
from pathlib import Path

import numpy as np
import orjson
import pytest
from analysis_runs import DOMAINS, RunFactory, output_line
from hypothesis import given
from hypothesis import strategies as st

from analysis import compute_metrics, design_of, load_run, output_errors, parse_decimal
from analysis.loading.logs.outputs import load_outputs
from runfolder import Manifest

# Family 0 has z=10, family 1 has z=20 (set explicitly below).
# int domain:    f0 asc 10, f0 rev 12, f1 asc 21, f1 rev 20
# x0.01 domain:  f0 asc 0.10, f0 rev 0.1, f1 asc 0.19, f1 rev 0.21
HAND = {
    (0, "int", "ascending"): 10,
    (0, "int", "reversed"): 12,
    (1, "int", "ascending"): 21,
    (1, "int", "reversed"): 20,
    (0, "x0.01", "ascending"): 10,
    (0, "x0.01", "reversed"): 10,
    (1, "x0.01", "ascending"): 19,
    (1, "x0.01", "reversed"): 21,
}


def hand_run(runs: RunFactory) -> Path:
    lines = [
        output_line(f, dom, "arithmetic", order, "direct", idx, z=10 * (f + 1))
        for (f, dom, order), idx in HAND.items()
    ]
    lines[5]["value"] = "0.1"  # same number as "0.10": parsed exactly
    return runs.write("hand", lines, decoders=["direct"], conditions=["arithmetic"], n_jobs=8)


def test_hand_computed_table(runs: RunFactory) -> None:
    run = load_run(hand_run(runs))
    m = compute_metrics(run.outputs, design_of(run.manifest, run.outputs))
    # APE: int 0, 20, 5, 0; x0.01 0, 0, 5, 5  -> MAPE 35/8
    assert m.get("mape", "direct", "arithmetic") == pytest.approx(35 / 8)
    # |index error| over N=100 cells: int 0, 2, 1, 0; x0.01 0, 0, 1, 1 -> 100 * 5/800
    assert m.get("nmae", "direct", "arithmetic") == pytest.approx(5 / 8)
    # APE <= 5 (5 exactly counts, decided in exact arithmetic): 7 of 8
    assert m.get("within5", "direct", "arithmetic") == pytest.approx(87.5)
    # asc/rev pairs: int |10-12|, |21-20|; x0.01 |10-10|, |19-21| (in cells of 100)
    assert m.get("ordering_gap", "direct", "arithmetic") == pytest.approx(5 / 4)
    # x0.01 vs int, same family and order: |10-10|, |10-12|, |19-21|, |21-20|
    assert m.get("affine_gap", "direct", "arithmetic") == pytest.approx(5 / 4)
    d = m.design
    by_domain = dict(zip(d.domains, m.mape_by_domain[0, 0], strict=True))
    assert by_domain == pytest.approx({"int": 25 / 4, "x0.01": 10 / 4})
    assert (m.n_ok[0, 0], m.n_failed[0, 0], m.n_missing[0, 0]) == (8, 0, 0)
    assert (m.rounds_min[0], m.rounds_max[0]) == (1, 1)


def test_five_percent_boundary_is_exact() -> None:
    # In float64, 100*|0.63-0.6|/0.6 is 5.000000000000004 and would miss the tolerance.
    assert 100 * abs(0.63 - 0.6) / 0.6 > 5
    ape, nae, index, within = output_errors(
        parse_decimal("0.6"), parse_decimal("0.63"), parse_decimal("0"), parse_decimal("0.01"), 100
    )
    assert (ape, within, index) == (5.0, 1.0, 63.0)
    assert nae == pytest.approx(3.0)


def test_zero_target_has_no_ape() -> None:
    ape, nae, _, within = output_errors(
        parse_decimal("0"), parse_decimal("3"), parse_decimal("-50"), parse_decimal("1"), 100
    )
    assert math.isnan(ape) and math.isnan(within)
    assert nae == 3.0


def test_bits_above_range_are_kept_not_clipped(runs: RunFactory) -> None:
    # index 120 on x0.01 is 1.20, above U = 1.00: it must count with its full error.
    line = output_line(0, "x0.01", "arithmetic", "ascending", "bits", 120, z=20)
    run = load_run(runs.write("bits", [line], decoders=["bits"], conditions=["arithmetic"]))
    assert run.outputs.value[0] == pytest.approx(1.2)
    m = compute_metrics(run.outputs, design_of(run.manifest, run.outputs))
    assert m.get("nmae", "bits", "arithmetic") == pytest.approx(100.0)
    assert m.get("mape", "bits", "arithmetic") == pytest.approx(500.0)


def test_nmae_is_invariant_to_the_affine_transforms(runs: RunFactory) -> None:
    # The same grid-index error (+3 cells) in every domain gives the same NMAE per domain.
    lines = [
        output_line(f, dom, "arithmetic", "ascending", "direct", 30 + f, z=27 + f)
        for f in range(3)
        for dom in DOMAINS
    ]
    run = load_run(runs.write("inv", lines, decoders=["direct"], conditions=["arithmetic"]))
    assert np.allclose(run.outputs.nae, 3.0)
    m = compute_metrics(run.outputs, design_of(run.manifest, run.outputs))
    assert m.get("affine_gap", "direct", "arithmetic") == pytest.approx(0.0)


def test_minus50_targets_are_signed(runs: RunFactory) -> None:
    line = output_line(0, "minus50", "provided", "ascending", "direct", 12, z=10)  # y=-40, ŷ=-38
    run = load_run(runs.write("neg", [line], decoders=["direct"], conditions=["provided"]))
    assert run.outputs.target[0] == -40 and run.outputs.value[0] == -38
    assert run.outputs.ape[0] == pytest.approx(5.0)
    assert run.outputs.within5[0] == 1.0


def test_oracle_run_has_zero_error(runs: RunFactory) -> None:
    run = load_run(runs.affine(families=range(3)))
    m = compute_metrics(run.outputs, design_of(run.manifest, run.outputs))
    assert np.all(m.point[[0, 1, 3, 4]] == 0.0)
    assert np.all(m.point[2] == 100.0)


# ---- property: the vectorised metrics equal a plain-Python computation with Fractions ----

_cell = st.tuples(
    st.integers(0, 3),  # family
    st.sampled_from(list(DOMAINS)),
    st.sampled_from(["arithmetic", "provided"]),
    st.sampled_from(["ascending", "reversed"]),
    st.sampled_from(["direct", "tree10", "bits"]),
)


def _brute_force(lines: list[dict]) -> dict[tuple[str, str, str], float]:
    ok = [r for r in lines if r["status"] == "ok"]
    exact = {}
    for r in ok:
        y, v = Fraction(r["target"]), Fraction(r["value"])
        lo, eps = Fraction(r["L"]), Fraction(r["eps"])
        exact[r["job"], r["decoder"]] = (y, v, (v - lo) / eps, r)
    out: dict[tuple[str, str, str], list[Fraction]] = {}
    for y, v, index, r in exact.values():
        key = (r["decoder"], r["condition"])
        if y != 0:  # APE is undefined at zero (minus50 with z = 50)
            ape = 100 * abs(v - y) / abs(y)
            out.setdefault(("mape", *key), []).append(ape)
            out.setdefault(("within5", *key), []).append(Fraction(100 if ape <= 5 else 0))
        out.setdefault(("nmae", *key), []).append(index_error(index, y, r))
        if r["order"] == "ascending":
            other = exact.get((r["job"].replace("ascending", "reversed"), r["decoder"]))
            if other is not None:
                out.setdefault(("ordering_gap", *key), []).append(abs(index - other[2]))
        if r["domain"] != "int":
            job = r["job"].replace(f"/{r['domain']}/", "/int/")
            ref = exact.get((job, r["decoder"]))
            if ref is not None:
                out.setdefault(("affine_gap", *key), []).append(abs(index - ref[2]))
    return {k: float(sum(v) / len(v)) for k, v in out.items()}


def index_error(index: Fraction, y: Fraction, r: dict) -> Fraction:
    true_index = (y - Fraction(r["L"])) / Fraction(r["eps"])
    return abs(index - true_index)  # 100·|ŷ−y|/(N·eps) = |Δindex| when N = 100


@given(
    cells=st.dictionaries(_cell, st.one_of(st.none(), st.integers(0, 127)), max_size=40),
    z=st.integers(1, 99).filter(lambda v: v != 50),
)
def test_metrics_match_brute_force(cells: dict, z: int) -> None:
    lines = [output_line(*key, idx, z=z + key[0]) for key, idx in cells.items()]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "outputs.jsonl"
        path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in lines))
        outputs = load_outputs(path)
    raw = {
        "suite": "affine",
        "decoders": [],
        "orders": ["ascending", "reversed"],
        "model": {"name": "m"},
    }
    manifest = Manifest.from_dict(raw, Path(tmp), partial=True)
    m = compute_metrics(outputs, design_of(manifest, outputs))
    expected = _brute_force(lines)
    for (stat, decoder, condition), value in expected.items():
        assert m.get(stat, decoder, condition) == pytest.approx(value, rel=1e-12, abs=1e-12)
    failed = sum(1 for r in lines if r["status"] == "failed")
    assert int(m.n_failed.sum()) == failed
    assert int(m.n_ok.sum()) == len(lines) - failed
