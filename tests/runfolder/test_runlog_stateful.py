"""The JSONL log against an in-memory model: append, crash mid-write, reopen, read."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from runfolder import JsonlAppender, JsonlReader, dumps_line

_records = st.dictionaries(
    st.sampled_from(["job", "round", "value", "note"]),
    st.one_of(st.integers(-10, 10**6), st.text(max_size=20), st.none()),
    min_size=1,
    max_size=4,
)


class LogMachine(RuleBasedStateMachine):
    """Whatever happens, the readable log is exactly the records whose append completed."""

    def __init__(self) -> None:
        super().__init__()
        self.dir = tempfile.TemporaryDirectory()
        self.path = Path(self.dir.name) / "log.jsonl"
        self.model: list[dict] = []
        self.log = JsonlAppender(self.path)

    @rule(record=_records)
    def append(self, record: dict) -> None:
        self.log.write(record)
        self.model.append(record)

    @rule(record=_records, cut=st.integers(1, 30))
    def crash_mid_write(self, record: dict, cut: int) -> None:
        # The process dies part-way through a line: the bytes reach the file, the newline not.
        line = dumps_line(record)
        self.log.close()
        with self.path.open("ab") as handle:
            handle.write(line[: min(cut, len(line) - 1)])
        self.log = JsonlAppender(self.path)  # what resume does: cut the torn tail, go on

    @rule()
    def reopen(self) -> None:
        self.log.close()
        self.log = JsonlAppender(self.path)

    @invariant()
    def readable_log_matches_model(self) -> None:
        reader = JsonlReader(self.path)
        assert list(reader) == self.model
        assert not reader.torn

    def teardown(self) -> None:
        self.log.close()
        self.dir.cleanup()


TestLog = LogMachine.TestCase
