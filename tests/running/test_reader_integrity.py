"""Every reader checks what resume checks (issue 32), on damaged copies of real small runs:
a line of another run, a record number that does not fit, a deleted sessions.jsonl, a
refused request cache, and the repairs each reader says once."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from analysis import load_run
from runfolder import read_sessions
from tests.runhelpers import SMALL, cli, records


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two complete sim runs of one suite (128 jobs each), ``a`` and ``b``."""
    root = tmp_path_factory.mktemp("runs")
    for name, seed in (("a", "1"), ("b", "3")):
        args = ["--run", str(root / name), "--model", f"sim:seed={seed}", "--no-progress"]
        assert cli("run", *SMALL, *args) == 0
    return root / "a", root / "b"


@pytest.fixture
def copy(runs: tuple[Path, Path], tmp_path: Path) -> Callable[[str], Path]:
    def make(name: str = "a") -> Path:
        target = tmp_path / f"copy-of-{name}-{len(list(tmp_path.glob('copy-of-*')))}"
        shutil.copytree(runs[0] if name == "a" else runs[1], target)
        return target

    return make


def last_seq(folder: Path) -> int:
    return max(r["seq"] for n in ("requests.jsonl", "outputs.jsonl") for r in records(folder / n))


def append(path: Path, record: dict[str, Any]) -> int:
    """Append ``record`` as the writer would; returns its line number."""
    with path.open("ab") as handle:
        handle.write(orjson.dumps(record) + b"\n")
    return len(path.read_bytes().splitlines())


def append_raw(path: Path, line: bytes) -> None:
    with path.open("ab") as handle:
        handle.write(line)


def one_error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


def readers(folder: Path, other: Path, out: Path) -> dict[str, list[str]]:
    """Every command that reads a run folder, as a user would call it on ``folder``."""
    quick = ["--no-probabilities", "--bootstrap", "0"]
    return {
        "analyze": ["analyze", str(folder), *quick],
        "analyze --strict": ["analyze", str(folder), "--strict", *quick],
        "report": ["report", str(folder), "--out", str(out / "report"), *quick],
        "diff": ["diff", str(other), str(folder), *quick],
        "export": ["export", str(folder), "--format", "csv", "--out", str(out / "export")],
        "status": ["status", str(folder)],
        "resume": ["resume", str(folder), "--no-progress"],
    }


@pytest.mark.parametrize("log", ["outputs.jsonl", "requests.jsonl"])
def test_a_line_of_another_run_is_refused_by_every_reader(
    copy: Callable[[str], Path],
    runs: tuple[Path, Path],
    tmp_path: Path,
    log: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # As found: a sim run's line appended to a complete run, its seq continuing the
    # numbering; analyze --strict took it as the run's own (one MAPE cell moved).
    folder = copy("a")
    foreign = records(runs[1] / log)[0]
    foreign["seq"] = last_seq(folder) + 1
    line = append(folder / log, foreign)
    before = {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}
    for name, args in readers(folder, runs[0], tmp_path).items():
        assert cli(*args) == 2, name
        error = one_error(capsys)
        assert f"{log} line {line} belongs to run {run_id_of(runs[1])!r}" in error, (name, error)
    assert {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()} == before
    assert not (tmp_path / "report").exists() and not (tmp_path / "export").exists()


@pytest.mark.parametrize("seq", [1, 5, 10**6])
def test_a_foreign_line_whose_number_does_not_fit_is_named_as_foreign(
    copy: Callable[[str], Path],
    runs: tuple[Path, Path],
    seq: int,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Not "lines cut or deleted" (a lower number read as a repeat, a higher one as a hole).
    folder = copy("a")
    foreign = records(runs[1] / "outputs.jsonl")[0]
    foreign["seq"] = seq
    line = append(folder / "outputs.jsonl", foreign)
    for args in (["analyze", str(folder), "--no-probabilities"], ["status", str(folder)]):
        assert cli(*args) == 2
        error = one_error(capsys)
        assert (
            f"outputs.jsonl line {line} belongs to run {run_id_of(runs[1])!r}" in error
            and "cut" not in error
        )


def test_an_unstamped_numbered_line_is_foreign(
    copy: Callable[[str], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    folder = copy("a")
    own = records(folder / "outputs.jsonl")[0]
    del own["run"]
    own["seq"] = last_seq(folder) + 1
    line = append(folder / "outputs.jsonl", own)
    assert cli("analyze", str(folder), "--no-probabilities") == 2
    assert f"outputs.jsonl line {line} carries no run id" in one_error(capsys)


def test_record_numbers_that_do_not_fit_name_their_cause(
    copy: Callable[[str], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    analyze = ["analyze", "--no-probabilities", "--bootstrap", "0"]
    # A line of this run renumbered far beyond the others: edited, not cut.
    folder = copy("a")
    lines = (folder / "outputs.jsonl").read_bytes().splitlines(keepends=True)
    last = orjson.loads(lines[-1])
    last["seq"] = 10**6
    (folder / "outputs.jsonl").write_bytes(b"".join(lines[:-1]) + orjson.dumps(last) + b"\n")
    assert cli(*analyze, str(folder)) == 2
    error = one_error(capsys)
    assert f"outputs.jsonl line {len(lines)} is numbered 1,000,000" in error
    assert "cut" not in error
    # The last output line copied into requests.jsonl: in both logs.
    folder = copy("a")
    append_raw(
        folder / "requests.jsonl",
        (folder / "outputs.jsonl").read_bytes().splitlines(keepends=True)[-1],
    )
    assert cli(*analyze, str(folder)) == 2
    assert "is in both logs" in one_error(capsys)
    # A line deleted from the middle: cut.
    folder = copy("a")
    lines = (folder / "requests.jsonl").read_bytes().splitlines(keepends=True)
    (folder / "requests.jsonl").write_bytes(b"".join(lines[:10] + lines[11:]))
    assert cli(*analyze, str(folder)) == 2
    assert "is in neither log: lines were cut or deleted" in one_error(capsys)


@pytest.mark.parametrize(
    ("broken", "said"),
    [
        # As found: resume recreated a deleted sessions.jsonl silently and accepted a manifest
        # edit it refuses while the file exists; status and analyze said nothing.
        ("deleted", "sessions.jsonl is missing"),
        # As found: an emptied (not deleted) sessions.jsonl turned the seal off; resume
        # accepted a manifest edit and sent its requests, and nothing warned.
        ("emptied", "sessions.jsonl holds no seal"),
    ],
)
def test_a_deleted_or_emptied_session_log_is_a_finding_for_every_reader(
    copy: Callable[[str], Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    broken: str,
    said: str,
) -> None:
    folder = copy("a")
    sessions = folder / "sessions.jsonl"
    if broken == "deleted":
        sessions.unlink()
    else:
        sessions.write_bytes(b"")
    path = folder / "manifest.json"
    manifest = orjson.loads(path.read_bytes())
    manifest["model"]["retries"]["max_attempts"] = 2
    path.write_bytes(orjson.dumps(manifest, option=orjson.OPT_INDENT_2))
    assert cli("resume", str(folder), "--no-progress") == 2
    assert said in one_error(capsys)
    assert (sessions.read_bytes() == b"") if broken == "emptied" else not sessions.exists()
    assert cli("status", str(folder)) == 0
    assert said in capsys.readouterr().out
    quick = ["--no-probabilities", "--bootstrap", "0"]
    assert cli("analyze", str(folder), *quick) == 0
    assert f"**Warning:** run {run_id_of(folder)}: {folder}/{said}" in capsys.readouterr().out
    assert cli("analyze", str(folder), "--strict", *quick) == 2
    assert "refused by --strict" in (error := one_error(capsys)) and said in error
    assert cli("export", str(folder), "--format", "csv", "--out", str(tmp_path / "x")) == 0
    assert said in capsys.readouterr().err
    # --allow-mismatch lets it through, and says so in the new session line.
    assert cli("resume", str(folder), "--no-progress", "--allow-mismatch") == 0
    (session,) = read_sessions(folder)
    assert said in session["allowed_mismatches"][0]


def test_a_session_line_of_another_run_is_a_finding(
    copy: Callable[[str], Path], runs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    folder = copy("a")
    foreign = read_sessions(runs[1])[0]
    line = append(folder / "sessions.jsonl", dict(foreign))
    assert [f.kind for f in load_run(folder).seal] == ["session_foreign"]
    assert cli("resume", str(folder), "--no-progress") == 2
    assert f"sessions.jsonl line {line} belongs to run {run_id_of(runs[1])!r}" in one_error(capsys)


def test_a_refused_cache_leaves_no_folder_and_no_session_line(
    tmp_path: Path, copy: Callable[[str], Path], monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    # As found: manifest, cases and a session line were left, so the same command, with the
    # cache fixed, was refused with "already holds a run".
    broken = tmp_path / "broken.sqlite3"
    broken.write_bytes(b"not a database\n" * 8)
    monkeypatch.setenv("NUMERICJEV_CACHE", str(broken))
    folder = tmp_path / "new"
    args = ["run", *SMALL, "--run", str(folder), "--cache", "read-write", "--no-progress"]
    assert cli(*args) == 2
    assert "request cache" in one_error(capsys)
    assert not folder.exists()
    resumed = copy("a")
    before = (resumed / "sessions.jsonl").read_bytes()
    assert cli("resume", str(resumed), "--cache", "read-write", "--no-progress") == 2
    assert "request cache" in one_error(capsys)
    assert (resumed / "sessions.jsonl").read_bytes() == before
    compared = tmp_path / "compared"
    assert cli("compare", "--models", "sim,sim:seed=7", "--suites", "affine", *SMALL,
               "--out", str(compared), "--cache", "read-write", "--no-progress") == 2  # fmt: skip
    assert "request cache" in one_error(capsys)  # was a traceback, and compare.json left
    assert not compared.exists()
    monkeypatch.setenv("NUMERICJEV_CACHE", str(tmp_path / "fixed.sqlite3"))
    assert cli(*args) == 0  # the same command, the cache fixed


def test_every_repair_is_said_once_by_resume_analyze_report_diff_and_export(
    copy: Callable[[str], Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = copy("a")
    requests = folder / "requests.jsonl"
    append_raw(requests, requests.read_bytes().splitlines(keepends=True)[4])  # a repeat
    quick = ["--no-probabilities", "--bootstrap", "0"]
    said = "1 duplicate request line(s) (counted once)"
    assert cli("analyze", str(folder), *quick) == 0
    assert capsys.readouterr().out.count(said) == 1
    assert cli("report", str(folder), "--out", str(tmp_path / "r"), *quick) == 0
    assert (tmp_path / "r" / "report.md").read_text().count(said) == 1
    capsys.readouterr()
    # diff and export say it in the same words (they said nothing).
    assert cli("diff", str(copy("b")), str(folder), *quick) == 0
    assert capsys.readouterr().out.count("B: log repairs: 0 duplicate output line(s)") == 1
    assert cli("export", str(folder), "--format", "csv", "--out", str(tmp_path / "x")) == 0
    err = capsys.readouterr().err
    assert err.count(said) == 1 and "numericjev export: warning: log repairs: " in err
    assert cli("resume", str(folder), "--no-progress") == 0
    warnings = [line for line in capsys.readouterr().err.splitlines() if "warning" in line]
    assert len(warnings) == 1 and "1 repeated log line(s)" in warnings[0], warnings


def test_merge_refuses_a_shard_with_a_foreign_line_or_no_session_log(
    tmp_path: Path, runs: tuple[Path, Path]
) -> None:
    from harness import ModelSpec, load_suite, run
    from harness.running.sharding import Shard
    from harness.spreading.merging import merge
    from harness.spreading.spread import Shards
    from runfolder import RunFolderError

    suite = load_suite("affine", params={"per_operator": "2"})
    parent = tmp_path / "run"
    for k in (0, 1):
        run(suite, ModelSpec("sim"), folder=parent, placement=Shards(2, k))
    shard = Shard(1, 2).folder(parent)
    foreign = records(runs[1] / "outputs.jsonl")[0]
    foreign["seq"] = last_seq(shard) + 1
    line = append(shard / "outputs.jsonl", foreign)
    with pytest.raises(
        RunFolderError, match=f"outputs.jsonl line {line} belongs to run {run_id_of(runs[1])!r}"
    ):
        merge(parent)
    (shard / "outputs.jsonl").write_bytes(
        b"".join((shard / "outputs.jsonl").read_bytes().splitlines(keepends=True)[:-1])
    )
    (shard / "sessions.jsonl").unlink()
    with pytest.raises(RunFolderError, match=r"sessions\.jsonl is missing"):
        merge(parent)
    assert not (parent / "outputs.jsonl").exists()  # nothing merged


def test_list_and_a_comparisons_status_name_a_foreign_line(
    copy: Callable[[str], Path],
    runs: tuple[Path, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # They read outputs.jsonl for jobs done without parsing the writer's lines; a line of
    # another run was counted as this run's job.
    out = tmp_path / "cmp"
    models = "sim:seed=1,sim:seed=3"
    assert cli("compare", "--models", models, "--suites", "affine", *SMALL, "--out", str(out)) == 0
    cell = next(p for p in out.iterdir() if (p / "manifest.json").is_file())
    foreign = records(runs[1] / "outputs.jsonl")[0]
    foreign["seq"] = last_seq(cell) + 1
    line = append(cell / "outputs.jsonl", foreign)
    capsys.readouterr()
    for args in (["status", str(out)], ["list", str(tmp_path)]):
        assert cli(*args) == 0
        shown = capsys.readouterr().out
        assert (
            f"{cell}  unreadable: " in shown
            and f"line {line} belongs to run {run_id_of(runs[1])!r}" in shown
        )
    folder = copy("a")  # a run folder of its own, as list shows it
    append(folder / "outputs.jsonl", {**foreign, "seq": last_seq(folder) + 1})
    assert cli("list", str(tmp_path)) == 0
    assert f"{folder}  unreadable: " in capsys.readouterr().out


def run_id_of(folder: Path) -> str:
    return str(orjson.loads((folder / "manifest.json").read_bytes())["run_id"])


def test_a_line_of_another_run_with_the_same_folder_name_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # As found: two runs called `base`; a line of one copied into the other was taken as the
    # run's own by analyze --strict (exit 0), as the run id was the folder's name.
    one, two = tmp_path / "x" / "base", tmp_path / "y" / "base"
    for folder, seed in ((one, "1"), (two, "3")):
        assert (
            cli("run", *SMALL, "--run", str(folder), "--model", f"sim:seed={seed}", "--no-progress")
            == 0
        )
    assert run_id_of(one) != run_id_of(two)
    foreign = records(two / "outputs.jsonl")[0]
    foreign["seq"] = last_seq(one) + 1
    line = append(one / "outputs.jsonl", foreign)
    capsys.readouterr()
    assert cli("analyze", str(one), "--strict", "--no-probabilities", "--bootstrap", "0") == 2
    assert f"outputs.jsonl line {line} belongs to run {run_id_of(two)!r}" in one_error(capsys)


def test_a_folder_whose_run_id_is_its_name_still_reads(
    copy: Callable[[str], Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Runs made before run ids were unique: the id is the folder's name, on every line too.
    old = tmp_path / "old"
    copy("a").rename(old)
    new_id = run_id_of(old)
    for name in ("manifest.json", "requests.jsonl", "outputs.jsonl", "sessions.jsonl"):
        path = old / name
        path.write_bytes(path.read_bytes().replace(new_id.encode(), b"old"))
    manifest = orjson.loads((old / "manifest.json").read_bytes())
    sessions = read_sessions(old)
    from runfolder import field_digests, manifest_digest

    sessions[-1]["manifest_sha256"] = manifest_digest(manifest)
    sessions[-1]["manifest_fields"] = field_digests(manifest)
    (old / "sessions.jsonl").write_bytes(b"".join(orjson.dumps(s) + b"\n" for s in sessions))
    assert run_id_of(old) == "old"
    assert load_run(old).seal == ()
    assert cli("analyze", str(old), "--strict", "--no-probabilities", "--bootstrap", "0") == 0
    assert cli("resume", str(old), "--no-progress") == 0


def test_resume_refuses_a_log_that_is_a_symbolic_link(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # As found: outputs.jsonl a link to a copy of the same run; resume wrote its lines into
    # the other folder, which every reader then refused.
    folder = tmp_path / "run"
    args = ["run", *SMALL, "--run", str(folder), "--max-requests", "40", "--no-progress"]
    assert cli(*args) == 1
    other = shutil.copytree(folder, tmp_path / "other")
    (folder / "outputs.jsonl").unlink()
    (folder / "outputs.jsonl").symlink_to(other / "outputs.jsonl")
    before = {p.name: p.read_bytes() for p in other.iterdir() if p.is_file()}
    capsys.readouterr()
    assert cli("resume", str(folder), "--no-progress") == 2
    assert "outputs.jsonl is a symbolic link" in one_error(capsys)
    assert {p.name: p.read_bytes() for p in other.iterdir() if p.is_file()} == before
