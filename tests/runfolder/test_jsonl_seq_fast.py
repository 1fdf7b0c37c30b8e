"""The reader's in-place reading of a line's ``seq`` gives what ``seq_of`` gives (issue 29:
the per-line checks of a first read, without a call for the writer's own ending)."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from runfolder.jsonl import JsonlReader, seq_of

_DIGITS = st.text("0123456789", max_size=22) | st.sampled_from(["9" * 19, "1" * 20, "7" * 21])
_SPACE = st.sampled_from(["", " ", "\t", "\x0b"])
_ENDING = st.tuples(_SPACE, _DIGITS, _SPACE, st.sampled_from(["}", "} ", "]"])).map(
    lambda t: f',"seq":{t[0]}{t[1]}{t[2]}{t[3]}'
)
_BODY = st.sampled_from(['{"a":1', '{"job":"x' + "y" * 40 + '"', "{"])


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(_BODY, _ENDING), min_size=1, max_size=12))
def test_seq_read_in_place_is_seq_of(
    tmp_path_factory: object, lines: list[tuple[str, str]]
) -> None:
    raw = [(body + ending).encode() + b"\n" for body, ending in lines]
    path = Path(tmp_path_factory.mktemp("seq")) / "log.jsonl"  # type: ignore[attr-defined]
    path.write_bytes(b"".join(raw))
    reader = JsonlReader[dict[str, object]](path, decode=lambda _line: {})  # any line a record
    for _ in reader:
        pass
    last = count = total = duplicates = 0
    for line in raw:
        seq = seq_of(line)
        if seq is None:
            continue
        if seq > last:
            last, count, total = seq, count + 1, total + seq
        else:
            duplicates += 1
    assert (reader.seq_last, reader.seq_count, reader.seq_sum) == (last, count, total)
    assert reader.duplicates == duplicates
