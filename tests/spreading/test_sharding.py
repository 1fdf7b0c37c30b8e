"""Shards of one run (``--shard K/N``) and their merge (``--workers N``: ``tests/spreading/test_pool.py``)."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness import Limits, ModelSpec, load_suite, run
from harness.cli import main
from harness.errors import ConfigError, ManifestMismatch
from harness.running.settings import RunSettings
from harness.running.sharding import Shard, shard_of
from harness.spreading.merging import merge
from harness.spreading.spread import Shards
from runfolder import (
    OUTPUTS,
    REQUESTS,
    TOTALS,
    RunFolderError,
    load_manifest,
    read_totals,
    totals_current,
)

PARAMS = {"per_operator": "3"}  # 192 jobs: a few hundred milliseconds a run


def small_suite():
    return load_suite("affine", params=PARAMS)


def outputs(folder: Path) -> dict[tuple[str, str], dict]:
    """Output records by (job, decoder), the run stamp left out."""
    found = {}
    for line in (folder / OUTPUTS).read_bytes().splitlines():
        record = orjson.loads(line)
        record.pop("run")
        record.pop("seq", None)  # numbered per run: differs between two runs of one suite
        found[(record["job"], record["decoder"])] = record
    return found


@given(st.lists(st.text(min_size=1, max_size=40), max_size=30), st.integers(1, 12))
def test_every_job_falls_in_exactly_one_stable_shard(ids: list[str], count: int) -> None:
    for job in ids:
        k = shard_of(job, count)
        assert 0 <= k < count
        assert shard_of(job, count) == k  # no salt, no process-dependent hash
        assert [Shard(i, count).holds_id(job) for i in range(count)].count(True) == 1


def test_shard_of_is_pinned() -> None:
    # Every machine must agree: a change here would split a running sharded run differently.
    ids = [f"affine/f{i}/x0.01/provided/forward/r0" for i in range(8)]
    assert [shard_of(job, 4) for job in ids] == [2, 1, 0, 3, 0, 3, 1, 3]


@pytest.mark.parametrize(
    ("text", "message"),
    [("3", "K/N"), ("a/4", "K/N"), ("4/4", "0 <= K < N"), ("0/0", "N >= 1"), ("-1/2", "K < N")],
)
def test_shard_option_is_checked(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        Shard.parse(text)


def test_four_shards_merged_equal_an_unsharded_run(tmp_path: Path) -> None:
    suite = small_suite()
    whole = run(suite, ModelSpec("sim"), folder=tmp_path / "whole")
    parent = tmp_path / "sharded"
    for k in (2, 0, 3, 1):  # any order
        result = run(suite, ModelSpec("sim"), folder=parent, placement=Shards(4, k))
        assert result.complete and result.folder == parent / "shards" / str(k)
    merged = merge(parent)
    assert merged.jobs == len(suite.jobs()) == whole.counters.jobs_done
    assert outputs(parent) == outputs(tmp_path / "whole")
    # The merged logs carry the parent's run id: resume and analysis read it as one run.
    run_id = load_manifest(parent).run_id
    lines = (parent / REQUESTS).read_bytes().splitlines()
    assert {orjson.loads(line)["run"] for line in lines} == {run_id}
    # Numbered 1..N across both merged logs, as one run's (readers skip no "repeat").
    from harness.running.replay import read_logs

    merged_state = read_logs(parent, suite.decoders, run_id)
    whole_state = read_logs(tmp_path / "whole", suite.decoders, load_manifest(whole.folder).run_id)
    assert merged_state.counters.requests == whole_state.counters.requests
    assert len(merged_state.finished) == len(suite.jobs())
    before = {name: (parent / name).read_bytes() for name in (OUTPUTS, REQUESTS)}
    merge(parent)
    assert {name: (parent / name).read_bytes() for name in before} == before  # idempotent
    merge(parent, rescan=False)  # numbering from the logs' last lines: the same offsets
    assert {name: (parent / name).read_bytes() for name in before} == before
    assert main(["analyze", str(parent)]) == 0
    # totals.json as an unsharded run's (what `numericjev list` reads), current for the
    # merged log; none once a shard has none (no stale sum).
    totals, own = read_totals(parent), read_totals(tmp_path / "whole")
    assert totals is not None and own is not None and totals_current(parent, totals)
    keys = ("requests", "errors", "input_tokens", "output_tokens", "cost_usd", "cost_known")
    assert {k: totals[k] for k in keys} == {k: own[k] for k in keys}
    (parent / "shards" / "1" / TOTALS).unlink()
    merge(parent)
    assert read_totals(parent) is None


def test_compressed_shards_merge_into_the_same_run(tmp_path: Path) -> None:
    # run --shard --compress: each shard's logs are zstd frames; merged, they read as one run
    # whose outputs and numbering equal an unsharded run's.
    suite = small_suite()
    whole = run(suite, ModelSpec("sim"), folder=tmp_path / "whole")
    parent = tmp_path / "sharded"
    settings = RunSettings(compress=True)
    for k in (1, 0, 2):
        run(suite, ModelSpec("sim"), folder=parent, placement=Shards(3, k), settings=settings)
    assert (parent / "shards" / "0" / "requests.jsonl.zst").exists()
    merged = merge(parent)
    assert merged.jobs == whole.counters.jobs_done
    assert outputs(parent) == outputs(tmp_path / "whole")
    from harness.running.replay import read_logs

    state = read_logs(parent, suite.decoders, load_manifest(parent).run_id)
    assert state.counters.requests == whole.counters.requests
    assert merge(parent).jobs == merged.jobs  # merging again changes nothing


def test_merge_names_missing_and_unfinished_shards(tmp_path: Path) -> None:
    suite = small_suite()
    parent = tmp_path / "run"
    run(suite, ModelSpec("sim"), folder=parent, placement=Shards(3, 0))
    run(suite, ModelSpec("sim"), Limits(max_requests=5), folder=parent, placement=Shards(3, 2))
    with pytest.raises(RunFolderError) as caught:
        merge(parent)
    message = str(caught.value)
    assert "shard 1 of 3 not found" in message
    assert "shard 2 has" in message and "--shard 2/3" in message
    assert not (parent / OUTPUTS).exists()  # nothing written


def test_a_shard_joins_only_a_matching_parent(tmp_path: Path) -> None:
    parent = tmp_path / "run"
    run(small_suite(), ModelSpec("sim"), folder=parent, placement=Shards(2, 0))
    other = load_suite("affine", params=PARAMS, seed=7)
    with pytest.raises(ManifestMismatch, match="case_hash"):
        run(other, ModelSpec("sim"), folder=parent, placement=Shards(2, 1))
    with pytest.raises(ManifestMismatch, match="K/2"):
        run(small_suite(), ModelSpec("sim"), folder=parent, placement=Shards(3, 1))
    knob = ModelSpec("sim", sim={"seed": "9"})
    with pytest.raises(ManifestMismatch, match="model"):
        run(small_suite(), knob, folder=parent, placement=Shards(2, 1))
    assert not (parent / "shards" / "1").exists()


def test_each_shard_takes_its_share_of_pace_and_spend(tmp_path: Path) -> None:
    limits = Limits(concurrency=8, rps=1000.0, max_cost_usd=4.0)
    parent = tmp_path / "run"
    run(small_suite(), ModelSpec("sim"), limits, folder=parent, placement=Shards(4, 1))
    shard = load_manifest(parent / "shards" / "1")
    assert shard.limits["rps"] == 250.0 and shard.limits["max_cost_usd"] == 1.0
    assert shard.limits["concurrency"] == 8
    parent_id = load_manifest(parent).run_id
    assert parent_id.startswith("run-")
    assert shard.extra["shard"] == {"index": 1, "count": 4, "parent": parent_id}
    assert load_manifest(parent).limits["rps"] == 1000.0
    assert shard.n_jobs == len(Shard(1, 4).jobs(small_suite()))


def test_a_rerun_shard_resumes(tmp_path: Path) -> None:
    parent = tmp_path / "run"
    first = run(
        small_suite(),
        ModelSpec("sim"),
        Limits(max_requests=3),
        folder=parent,
        placement=Shards(2, 0),
    )
    assert first.stopped and not first.complete
    again = run(small_suite(), ModelSpec("sim"), folder=parent, placement=Shards(2, 0))
    assert again.complete


def test_a_sharded_parent_is_not_resumed_as_one_run(tmp_path: Path) -> None:
    from harness import resume

    parent = tmp_path / "run"
    run(small_suite(), ModelSpec("sim"), folder=parent, placement=Shards(2, 0))
    with pytest.raises(RunFolderError, match="parent of 2 shards"):
        resume(parent)


def test_shard_needs_a_run_folder(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--shard", "0/2", "--no-progress"]) == 2
    assert "--shard needs --run" in capsys.readouterr().err


def test_status_of_a_parent_lists_its_shards(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    parent = tmp_path / "run"
    run(small_suite(), ModelSpec("sim"), folder=parent, placement=Shards(3, 1))
    assert main(["status", str(parent)]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    want = len(Shard(1, 3).jobs(small_suite()))
    assert last == f"shards (3): 0: not here; 1: {want}/{want} done; 2: not here (not merged yet)"


def test_a_merged_run_is_not_taken_for_an_edited_manifest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The shards' session lines seal the shards' manifests; the merge seals the parent's,
    # else status, analysis (--strict refused) and resume saw "manifest.json was edited".
    from runfolder import SESSIONS, read_sessions

    parent = tmp_path / "run"
    for k in (0, 1):
        run(small_suite(), ModelSpec("sim"), folder=parent, placement=Shards(2, k))
    merge(parent)
    sessions = (parent / SESSIONS).read_bytes()
    assert [s["command"] for s in read_sessions(parent)] == ["run", "run", "merge"]
    merge(parent)
    assert (parent / SESSIONS).read_bytes() == sessions  # merging again: the same bytes
    capsys.readouterr()
    assert main(["status", str(parent)]) == 0
    out = capsys.readouterr().out
    assert "edited" not in out and "sessions: 2 (0 resumes" in out
    assert main(["analyze", "--strict", "--no-probabilities", "--bootstrap", "0", str(parent)]) == 0
    assert main(["resume", str(parent), "--no-progress"]) == 0


def test_shards_need_the_one_folder_every_shard_names() -> None:
    with pytest.raises(ConfigError, match="shards need a run folder"):
        run(small_suite(), ModelSpec("sim"), placement=Shards(2, 0))
    with pytest.raises(ConfigError, match="shards need a run folder"):
        run(small_suite(), ModelSpec("sim"), placement=Shards(2))
