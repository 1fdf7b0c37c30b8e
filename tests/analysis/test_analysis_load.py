"""Reading run folders: torn lines, duplicates, failures, missing outputs, request facts."""

from __future__ import annotations

import numpy as np
import pytest
from analysis_runs import SKIP, RunFactory, exact, output_line, request_line, true_index

from analysis import (
    LogFormatError,
    analyze_run,
    compute_metrics,
    design_of,
    find_output,
    load_run,
)


def test_torn_last_line_is_skipped_and_counted(runs: RunFactory) -> None:
    lines = [output_line(0, "int", "arithmetic", "ascending", "direct", 5)]
    path = runs.write("torn", lines, tail=b'{"job": "affine/f1/int/arith', decoders=["direct"])
    with (path / "requests.jsonl").open("ab") as handle:
        handle.write(b'{"job": "x", "rou')
    run = load_run(path)
    assert len(run.outputs) == 1
    assert run.outputs.stats.torn_last_line == 1
    assert run.requests.stats.torn_last_line == 1
    assert analyze_run(run, n_boot=0).facts.torn_lines == 2


def test_unparsable_line_in_the_middle_is_an_error(runs: RunFactory) -> None:
    lines = [output_line(0, "int", "arithmetic", o, "direct", 5) for o in ("ascending", "reversed")]
    path = runs.write("bad", lines, decoders=["direct"])
    text = (path / "outputs.jsonl").read_bytes().split(b"\n")
    (path / "outputs.jsonl").write_bytes(b"\n".join([text[0], b"{not json", text[1], b""]))
    with pytest.raises(LogFormatError, match=r"line 2 .*only the last line may be torn"):
        load_run(path)


def test_missing_field_names_the_line_and_field(runs: RunFactory) -> None:
    line = output_line(0, "int", "arithmetic", "ascending", "direct", 5)
    del line["eps"]
    with pytest.raises(LogFormatError, match=r"line 1: missing field\(s\) eps"):
        load_run(runs.write("nofield", [line], decoders=["direct"]))


def test_duplicates_keep_the_last_line_and_are_counted(runs: RunFactory) -> None:
    first = output_line(0, "int", "arithmetic", "ascending", "direct", 5)
    second = output_line(0, "int", "arithmetic", "ascending", "direct", 7)
    other = output_line(1, "int", "arithmetic", "ascending", "direct", 9)
    run = load_run(runs.write("dup", [first, other, second], decoders=["direct"]))
    assert run.outputs.stats.duplicates == 1
    assert len(run.outputs) == 2
    assert run.outputs.value_text[0] == "7"  # replaced in place, last write wins
    assert analyze_run(run, n_boot=0).facts.duplicate_outputs == 1


def test_failed_and_missing_outputs_are_counted_not_averaged(runs: RunFactory) -> None:
    def predict(family: int, domain: str, condition: str, order: str, decoder: str):
        if (family, domain, order, decoder) == (0, "int", "ascending", "tree10"):
            return None if condition == "arithmetic" else SKIP
        if (family, domain, order, decoder) == (1, "int", "ascending", "tree10"):
            return SKIP if condition == "arithmetic" else true_index(family) + 10
        return exact(family, domain, condition, order, decoder)

    run = load_run(runs.affine(families=range(2), predict=predict))
    a = analyze_run(run, n_boot=0)
    m = a.metrics
    d, arith, prov = m.design.decoders.index("tree10"), 0, 1
    assert (m.n_ok[d, arith], m.n_failed[d, arith], m.n_missing[d, arith]) == (14, 1, 1)
    assert (m.n_ok[d, prov], m.n_failed[d, prov], m.n_missing[d, prov]) == (15, 0, 1)
    # Means are over ok outputs only: the one wrong provided output is averaged over 15.
    assert m.get("nmae", "tree10", "provided") == pytest.approx(10 / 15)
    assert m.get("nmae", "tree10", "arithmetic") == 0.0
    assert (a.facts.outputs_failed, a.facts.outputs_missing) == (1, 2)


def test_request_facts(runs: RunFactory) -> None:
    lines = [output_line(0, "int", "arithmetic", "ascending", "direct", 5)]
    job = lines[0]["job"]
    requests = [
        request_line(job, 1, latency_ms=100.0, cost_usd=0.001, model="jev-1.13.0"),
        request_line(
            job,
            1,
            attempt=2,
            latency_ms=300.0,
            cost_usd=None,
            status=503,
            response=None,
            model=None,
            usage=None,
            error={"kind": "http_503", "message": "busy"},
        ),
        request_line(
            job,
            2,
            latency_ms=200.0,
            cost_usd=0.002,
            model="jev-1.13.0",
            usage={"input_tokens": 900, "output_tokens": 30},
        ),
        request_line(job, 3, latency_ms=400.0, cost_usd=0.003, model="jev-1.13.1"),
    ]
    run = load_run(runs.write("req", lines, requests, decoders=["direct"]))
    f = analyze_run(run, n_boot=0).facts
    assert f.requests == 4 and f.retries == 1 and f.jobs_with_requests == 1
    assert f.served_models == (("jev-1.13.0", 2), ("jev-1.13.1", 1))
    assert f.errors_by_kind == (("http_503", 1),) and f.errors == 1
    assert (f.input_tokens, f.output_tokens) == (920, 34)
    assert f.cost_usd == pytest.approx(0.006) and f.requests_without_cost == 1
    assert f.latency_p50_ms == pytest.approx(250.0)
    assert f.latency_p95_ms == pytest.approx(np.percentile([100, 200, 300, 400], 95))


def test_missing_requests_log_is_reported(runs: RunFactory) -> None:
    path = runs.affine(families=range(1))
    (path / "requests.jsonl").unlink()
    f = analyze_run(load_run(path), n_boot=0).facts
    assert not f.requests_log_present and f.requests == 0 and f.input_tokens is None


def test_family_order_does_not_depend_on_write_order(runs: RunFactory) -> None:
    lines = [output_line(f, "int", "arithmetic", "ascending", "direct", 5) for f in (10, 2, 33, 1)]
    run = load_run(runs.write("order", lines, decoders=["direct"]))
    assert run.outputs.family_names == ("1", "2", "10", "33")
    assert [run.outputs.family_names[i] for i in run.outputs.family] == ["10", "2", "33", "1"]


def test_unknown_decoders_are_kept_after_known_ones(runs: RunFactory) -> None:
    lines = [
        output_line(0, "int", "arithmetic", "ascending", d, 5)
        for d in ("imported_head", "bits", "tree3", "direct", "tree16")
    ]
    run = load_run(runs.write("imp", lines, decoders=["direct", "bits"]))
    design = design_of(run.manifest, run.outputs)
    assert design.decoders == ("direct", "tree3", "tree16", "bits", "imported_head")
    m = compute_metrics(run.outputs, design)
    assert m.n_missing[design.decoders.index("imported_head"), 0] == 0  # not promised


def test_find_output_returns_the_last_record_with_trace(runs: RunFactory) -> None:
    a = output_line(0, "x0.01", "arithmetic", "ascending", "tree10", 37)
    b = output_line(0, "x0.01", "arithmetic", "ascending", "tree10", 38)
    path = runs.write("find", [a, b], decoders=["tree10"])
    record = find_output(path / "outputs.jsonl", a["job"], "tree10")
    assert record is not None and record["value"] == "0.38" and len(record["trace"]) == 2
    assert find_output(path / "outputs.jsonl", "nope", "tree10") is None
