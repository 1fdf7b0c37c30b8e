"""Finding runs: unique folder names, ``latest``, and ``numericjev list`` without the logs."""

from __future__ import annotations

import os
import threading
from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import harness.running.naming
from harness import ModelSpec, load_suite, run
from harness.running.naming import folder_model_name
from harness.serve import ServerConfig
from runfolder import (
    RunFolderError,
    dumps_line,
    entries,
    job_status,
    list_rows,
    read_totals,
    resolve_run,
    unique_folder,
)
from tests.counting import counting_server
from tests.runhelpers import cli

SMALL = ["--suite", "exploratory"]


def test_unique_folder_never_hands_one_name_out_twice(tmp_path: Path) -> None:
    made: list[Path] = []
    lock = threading.Lock()

    def take() -> None:
        folder = unique_folder(tmp_path / "runs", "affine-sim-20261122-181000")
        with lock:
            made.append(folder)

    threads = [threading.Thread(target=take) for _ in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    names = sorted(p.name for p in made)
    assert len(set(names)) == 12 and all(p.is_dir() for p in made)
    assert "affine-sim-20261122-181000" in names and "affine-sim-20261122-181000-12" in names


class _Frozen(datetime):
    @classmethod
    def now(cls, tz: object = None) -> _Frozen:  # type: ignore[override]
        return cls(2026, 11, 22, 18, 10, 0, tzinfo=UTC)


def test_runs_started_in_the_same_second_get_two_folders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(harness.running.naming, "datetime", _Frozen)
    suite = load_suite("exploratory")
    first = run(suite, ModelSpec("sim")).folder
    second = run(suite, ModelSpec("sim")).folder
    assert first.name == "exploratory-sim-20261122-181000"
    assert second.name == "exploratory-sim-20261122-181000-2"
    # latest: the same created_utc (frozen), so the manifest written last decides.
    assert resolve_run("latest") == second
    third = run(suite, ModelSpec("sim", sim={"seed": "7"})).folder
    assert third.name == "exploratory-sim_seed_7-20261122-181000"


def test_run_folders_are_named_by_model_knobs_and_wire_never_by_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(harness.running.naming, "datetime", _Frozen)
    with counting_server(ServerConfig(port=0)) as (url, _):
        spec = ModelSpec("jev-sim", base_url=url, top_logprobs=5)
        folder = run(load_suite("exploratory"), spec).folder
    assert folder.name == "exploratory-jev-sim-20261122-181000"
    examples = [
        (  # the knobs sorted: one name however the spec was written
            ModelSpec("sim", sim={"seed": "3", "confusion": "0.3"}),
            "sim_confusion_0.3_seed_3",
        ),
        (
            ModelSpec("gpt-4o-mini", base_url="http://10.0.0.2:8000/v1", wire="openai-chat"),
            "gpt-4o-mini_openai-chat",
        ),
        (
            ModelSpec("openai/gpt-4o:free", wire="openai-decisions"),
            "openai_gpt-4o_free_openai-decisions",
        ),
        (ModelSpec("gguf:/models/SmolLM2-135M.Q8.gguf"), "gguf_SmolLM2-135M.Q8"),
        (ModelSpec("modèle v2"), "mod_le_v2"),
    ]
    for example, name in examples:
        assert folder_model_name(example) == name


@given(st.text(min_size=1, max_size=300).filter(str.strip))
@settings(max_examples=200, deadline=None)
def test_any_model_name_gives_a_short_safe_folder_name(name: str) -> None:
    made = folder_model_name(ModelSpec(name.strip()))
    assert 0 < len(made) <= 60 and made.isascii()
    assert all(ch.isalnum() or ch in "-._" for ch in made)


def _stamp(folder: Path, created: str, name: str = "manifest.json") -> None:
    path = folder / name
    raw = orjson.loads(path.read_bytes())
    raw["created_utc"] = created
    path.write_bytes(orjson.dumps(raw))


def test_latest_is_the_run_started_last(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(RunFolderError, match="'latest' found no run folder under runs/"):
        resolve_run("latest")
    for name in ("a", "b", "c"):
        assert cli("run", *SMALL, "--run", f"runs/{name}", "--no-progress") == 0
    _stamp(Path("runs/a"), "2030-01-01T00:00:00+00:00")  # started last, written first
    (Path("runs") / "empty").mkdir()  # a folder without a manifest is not a run
    assert resolve_run("latest") == Path("runs/a")
    assert [p.name for p in entries(Path("runs"))] == ["a", "c", "b"]
    assert resolve_run("runs/b") == Path("runs/b")  # anything else is a path
    # Both command lines resolve it the same way.
    assert cli("status", "latest") == 0
    from analysis.cli import main as analysis_main

    assert analysis_main(["analyze", "latest", "--bootstrap", "0", "--no-probabilities"]) == 0


def test_list_reads_totals_not_the_request_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    done, capped = tmp_path / "runs" / "done", tmp_path / "runs" / "capped"
    assert cli("run", *SMALL, "--run", str(done), "--no-progress") == 0
    assert cli("run", *SMALL, "--run", str(capped), "--no-progress", "--max-requests", "20") == 1
    totals = read_totals(done)
    assert totals is not None and totals["requests"] == 192 and totals["errors"] == 0
    assert totals["requests_end"] == (done / "requests.jsonl").stat().st_size
    rows = {row.folder.name: row for row in list_rows(entries(tmp_path / "runs"))}
    assert rows["done"].complete and rows["done"].exact and rows["done"].requests == 192
    assert rows["done"].pending == 0 and rows["done"].mark == "simulated"
    assert not rows["capped"].complete and rows["capped"].requests == 20
    assert rows["capped"].done + rows["capped"].failed + (rows["capped"].pending or 0) == 48
    # A session killed outright leaves the log longer than its totals: a lower bound.
    with (done / "requests.jsonl").open("ab") as log:
        log.write(b'{"job":"x"}\n')
    assert not list_rows([done])[0].exact
    # The log itself is never read: an unreadable one changes nothing in the listing.
    os.chmod(done / "requests.jsonl", 0)
    try:
        assert cli("list", str(tmp_path / "runs")) == 0
    finally:
        os.chmod(done / "requests.jsonl", 0o644)
    out = capsys.readouterr().out.splitlines()[-2:]
    assert out[0].startswith(f"{capped}  exploratory  sim (simulated)")  # newest first
    assert "INCOMPLETE" in out[0] and "requests 20 " in out[0]
    assert out[1].startswith(str(done)) and "requests >=192" in out[1]
    assert out[1].endswith("complete") and "jobs 48/48 done, 0 failed, 0 pending" in out[1]


def test_list_tells_two_simulated_versions_apart(tmp_path: Path) -> None:
    """A sim run's row names the knobs set, as --model takes them; the default sim is "sim"."""
    runs = tmp_path / "runs"
    for name, model in (("default", "sim"), ("seven", "sim:seed=7,confusion=0.3")):
        assert cli("run", *SMALL, "--model", model, "--run", str(runs / name), "--no-progress") == 0
    models = {row.folder.name: row.model for row in list_rows(entries(runs))}
    assert models == {"default": "sim", "seven": "sim:seed=7,confusion=0.3"}


def test_list_of_an_empty_or_missing_root(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli("list", str(tmp_path)) == 0
    assert "no run folders under" in capsys.readouterr().out
    assert cli("list", str(tmp_path / "nope")) == 2


job_ids = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=8)
lines = st.lists(
    st.tuples(
        job_ids,
        st.sampled_from(["tree2", "direct", 'odd"name']),
        st.sampled_from(["ok", "failed"]),
        st.booleans(),  # written by the one writer, or by hand (another spacing)
        st.booleans(),  # with a trace and extra that hold keys named like the fields
    ),
    max_size=30,
)


@given(lines)
@settings(max_examples=60, deadline=None)
def test_job_status_reads_raw_lines_as_a_parser_would(
    tmp_path_factory: pytest.TempPathFactory, written: list[tuple[str, str, str, bool, bool]]
) -> None:
    folder = tmp_path_factory.mktemp("status")
    last: dict[str, dict[str, str]] = {}
    with (folder / "outputs.jsonl").open("wb") as out:
        for job, decoder, status, compact, nested in written:
            record: dict[str, object] = {"job": job, "suite": "s", "decoder": decoder}
            if nested:
                record["trace"] = [{"status": "ok", "decoder": "x"}]
                record["extra"] = {"decoder": "y", "status": "failed"}
            record |= {"status": status, "simulated": True, "run": "r"}
            line = dumps_line(record)
            out.write(line if compact else b"{ " + line[1:])  # as a person might write it
            last.setdefault(job, {})[decoder] = status
        out.write(b'{"job":"torn","decoder":"tree2","status":"ok"')  # no newline: ignored
    decoders = ("tree2", "direct")
    done = {j for j, s in last.items() if all(s.get(d) == "ok" for d in decoders)}
    assert job_status(folder, decoders) == (done, set(last) - done)
