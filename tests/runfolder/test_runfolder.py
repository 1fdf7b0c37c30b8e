"""The run-folder format package: line round trip, unwritable values, manifest, error kinds."""

from __future__ import annotations

import ast
import inspect
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import runfolder
from runfolder import (
    ERROR_KINDS,
    JsonlAppender,
    JsonlReader,
    LogFormatError,
    Manifest,
    RecordError,
    RunFolderError,
    dumps_line,
    encode_manifest,
    load_manifest,
    read_sessions,
    valid_end,
)
from tests.runhelpers import SMALL, cli

HARNESS = Path(__file__).resolve().parents[2] / "harness"
INT_MIN, INT_MAX = -(2**63), 2**64 - 1

# JSON values orjson round-trips exactly: every text but lone surrogates (st.text() already
# leaves those out), None, booleans, integers in orjson's range, finite floats.
_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(INT_MIN, INT_MAX),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(),
)
_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)
_records = st.dictionaries(st.text(), _values, max_size=6)


def _ordered(value: Any) -> Any:
    """``value`` with every dict turned into its list of items, so key order is compared."""
    if isinstance(value, dict):
        return [(k, _ordered(v)) for k, v in value.items()]
    if isinstance(value, list):
        return [_ordered(v) for v in value]
    return value


@given(records=st.lists(_records, max_size=5))
@example(records=[{}])
@example(records=[{"z": 1, "a": 2, "m": {"b": None, "a": [1, "é"]}}])  # key order, nested
@example(records=[{"text": "Ünïcødé ✓ 中文 \U0001f600", "nul": "\x00", "ls": "\u2028\n"}])
@example(records=[{"max": INT_MAX, "min": INT_MIN, "neg0": -0.0, "tiny": 5e-324}])
@example(records=[{"": ""}, {"deep": {"a": {"b": {"c": {"d": [[], {}]}}}}}])
def test_lines_round_trip_exactly(records: list[dict[str, Any]], tmp_path_factory) -> None:
    path = tmp_path_factory.mktemp("rt") / "log.jsonl"
    with JsonlAppender(path) as log:
        for record in records:
            log.write(record)
    back = list(JsonlReader[dict[str, Any]](path))
    assert _ordered(back) == _ordered(records)
    assert path.read_bytes() == b"".join(dumps_line(r) for r in records)
    assert all(line.endswith(b"\n") for line in path.read_bytes().splitlines(keepends=True))


@given(
    big=st.one_of(st.integers(min_value=INT_MAX + 1), st.integers(max_value=INT_MIN - 1)),
    where=st.sampled_from(["top", "nested", "list"]),
)
@example(big=INT_MAX + 1, where="top")
@example(big=INT_MIN - 1, where="top")
@example(big=10**400, where="nested")
def test_integers_beyond_64_bits_are_refused_by_name_and_nothing_is_written(
    big: int, where: str, tmp_path_factory
) -> None:
    record: dict[str, Any] = {"job": "j", "round": 1}
    field = {"top": "n", "nested": "usage.input_tokens", "list": "trace[1]"}[where]
    if where == "top":
        record["n"] = big
    elif where == "nested":
        record["usage"] = {"input_tokens": big}
    else:
        record["trace"] = [0, big]
    path = tmp_path_factory.mktemp("big") / "log.jsonl"
    with JsonlAppender(path) as log:
        log.write({"job": "before"})
        with pytest.raises(RecordError) as info:
            log.write(record)
    message = str(info.value)
    assert f"field {field!r}" in message and "64-bit" in message and "\n" not in message
    assert message.startswith("log.jsonl: ") and "nothing was written" in message
    assert list(JsonlReader[dict[str, Any]](path)) == [{"job": "before"}]  # never a silent loss


@pytest.mark.parametrize(
    ("record", "problem"),
    [
        ({"a": {1: "x"}}, "key that is not a string"),
        ({"a": "\ud800"}, "lone surrogate"),
        ({"a": [object()]}, "a object"),
    ],
)
def test_other_unwritable_values_name_the_field(record: dict[str, Any], problem: str) -> None:
    with pytest.raises(RecordError, match=problem):
        dumps_line(record, "requests.jsonl")


def test_torn_rule_a_last_line_without_newline_is_torn_even_if_it_parses(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    path.write_bytes(b'{"a":1}\n\n{"b":2}')  # a blank line is skipped; the tail parses
    reader = JsonlReader[dict[str, Any]](path)
    assert list(reader) == [{"a": 1}]
    assert reader.torn and reader.torn_bytes == len(b'{"b":2}') and reader.records == 1
    assert valid_end(path) == len(b'{"a":1}\n\n')
    with JsonlAppender(path) as log:  # the next append cuts the tail first
        log.write({"c": 3})
    assert path.read_bytes() == b'{"a":1}\n\n{"c":3}\n'


@pytest.mark.parametrize(
    "content",
    [b'{"a":1}\nnot json\n{"b":2}\n', b'{"a":1}\n{"b":2\n', b'{"a":1}\n[1, 2]\n'],
    ids=["middle", "last-with-newline", "not-an-object"],
)
def test_a_whole_line_that_is_not_an_object_is_an_error_naming_file_and_line(
    tmp_path: Path, content: bytes
) -> None:
    path = tmp_path / "outputs.jsonl"
    path.write_bytes(content)
    with pytest.raises(LogFormatError, match=r"outputs.jsonl line 2 is not a JSON object"):
        list(JsonlReader[dict[str, Any]](path))
    with pytest.raises(LogFormatError):
        JsonlAppender(path)  # nothing is cut or appended
    assert path.read_bytes() == content


def test_keep_filters_without_parsing_but_counts_every_record(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    path.write_bytes(b'{"job":"a"}\n{"job":"b"}\n{"job":"a","n":2}\n')
    reader = JsonlReader[dict[str, Any]](path, keep=lambda line: line.startswith(b'{"job":"a"'))
    assert [r.get("n") for r in reader] == [None, 2]
    assert reader.records == 3 and reader.valid_bytes == path.stat().st_size


def test_missing_log_reads_as_empty(tmp_path: Path) -> None:
    reader = JsonlReader[dict[str, Any]](tmp_path / "absent.jsonl")
    assert list(reader) == [] and not reader.torn and reader.records == 0
    assert read_sessions(tmp_path) == []  # runs made before sessions.jsonl


# The manifest


@pytest.fixture(scope="module")
def small_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("small") / "run"
    assert cli("run", *SMALL, "--run", str(folder), "--no-progress") == 0
    return folder


def test_manifest_round_trips_exactly(small_run: Path) -> None:
    raw = orjson.loads((small_run / "manifest.json").read_bytes())
    manifest = load_manifest(small_run)
    assert _ordered(manifest.to_dict()) == _ordered(raw)
    assert Manifest.from_dict(manifest.to_dict(), small_run) == manifest
    assert encode_manifest(manifest) == (small_run / "manifest.json").read_bytes()
    assert manifest.decoders == ("direct", "tree2", "tree4", "tree10", "digits", "bits")
    assert manifest.model.simulated and manifest.limits["concurrency"] == 64


def test_manifest_keeps_fields_it_does_not_know(small_run: Path) -> None:
    raw = orjson.loads((small_run / "manifest.json").read_bytes())
    raw["later_field"] = {"x": 1}
    raw["model"]["region"] = "eu"
    manifest = Manifest.from_dict(raw, small_run)
    # "cache" is the harness's own (the run's request-cache mode), unknown to runfolder too.
    assert manifest.extra == {"cache": raw["cache"], "later_field": {"x": 1}}
    assert manifest.model.extra == {"region": "eu"}
    assert manifest.to_dict()["later_field"] == {"x": 1}


def test_one_manifest_type_read_strictly_or_partial(small_run: Path, tmp_path: Path) -> None:
    # A whole manifest reads alike both ways (a partial read leaves limits and versions out).
    strict, partial = load_manifest(small_run), load_manifest(small_run, partial=True)
    assert partial == replace(strict, limits=None, versions=None)
    assert partial.raw == strict.raw == orjson.loads((small_run / "manifest.json").read_bytes())
    # A hand-made one: analysis reads it, its other facts unknown; resume refuses it.
    folder = tmp_path / "hand"
    folder.mkdir()
    raw = {"suite": "affine", "decoders": ["direct"], "model": {"name": "m"}}
    (folder / "manifest.json").write_bytes(orjson.dumps(raw))
    manifest = load_manifest(folder, partial=True)
    assert (manifest.run_id, manifest.seed, manifest.model.backend) == ("hand", None, None)
    assert (manifest.orders, manifest.folder, manifest.format_version) == ((), folder, 1)
    with pytest.raises(RunFolderError, match="is not a NumericJev manifest of format 1"):
        load_manifest(folder)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda m: m.update(seed="x"), "manifest.json: field 'seed' must be an integer; got 'x'"),
        (lambda m: m.update(seed=True), "field 'seed' must be an integer; got True"),
        (lambda m: m.pop("case_hash"), "field 'case_hash' is missing"),
        (lambda m: m["model"].update(name=7), "field 'model.name' must be a string; got 7"),
        (lambda m: m["limits"].update(rps="fast"), "field 'limits.rps' must be a number or null"),
        (lambda m: m.update(decoders="direct"), "field 'decoders' must be a list of names"),
        (lambda m: m.pop("format_version"), "is not a NumericJev manifest of format 1"),
        (lambda m: m.update(format_version=2), "format_version 2; this numericjev reads version 1"),
    ],
)
def test_manifest_loader_names_the_bad_field_in_one_line(
    small_run: Path, tmp_path: Path, edit, message: str
) -> None:
    raw = orjson.loads((small_run / "manifest.json").read_bytes())
    edit(raw)
    folder = tmp_path / "edited"
    folder.mkdir()
    (folder / "manifest.json").write_bytes(orjson.dumps(raw))
    with pytest.raises(RunFolderError) as info:
        load_manifest(folder)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_manifest_refuses_nan_and_huge_integers_before_the_folder_exists(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for option, value, field in [
        ("--rps", "nan", "limits.rps"),
        ("--max-cost-usd", "inf", "limits.max_cost_usd"),
        ("--max-requests", str(2**70), "limits.max_requests"),
    ]:
        folder = tmp_path / option.strip("-")
        assert cli("run", *SMALL, option, value, "--run", str(folder), "--no-progress") == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("numericjev run: error: manifest.json: ")
        assert f"field {field!r}" in err[0]
        assert not folder.exists()


# The error kinds


def _kinds_written_by_the_harness() -> set[str]:
    """Every error kind literal in harness sources: BackendError("kind", ...), kind="..."."""
    kinds = set()
    for path in HARNESS.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call):
                continue
            name = getattr(node.func, "id", getattr(node.func, "attr", ""))
            first = node.args[0] if node.args else None
            if name in ("BackendError", "TransientError", "AuthError") and isinstance(
                first, ast.Constant
            ):
                kinds.add(str(first.value))
            for keyword in node.keywords:
                if keyword.arg == "kind" and isinstance(keyword.value, ast.Constant):
                    kinds.add(str(keyword.value.value))
    return kinds - {"ok"}  # Decision(kind="ok") classifies a success, never logged


def test_error_kind_literal_lists_exactly_what_the_harness_writes() -> None:
    written = _kinds_written_by_the_harness()
    assert len(written) > 8  # the scan found the classifier
    assert written <= ERROR_KINDS, f"add {sorted(written - ERROR_KINDS)} to runfolder.ErrorKind"
    # "error" is the scheduler's name for an attempt reported without a kind.
    assert ERROR_KINDS - written == {"error"}, "ErrorKind lists kinds nothing writes"


def test_exported_members() -> None:
    public = {
        name
        for name, value in vars(runfolder).items()
        if not name.startswith("_") and not inspect.ismodule(value) and name != "annotations"
    }
    assert set(runfolder.__all__) == public
    assert len(runfolder.__all__) == len(set(runfolder.__all__))
