"""The job viewer's data block: :class:`JobRounds` packed into one gzip'd, base64'd binary.

Layout (little-endian), inflated in the page by the browser's own
``DecompressionStream('gzip')``::

    "NJV1"  u32 header length  header JSON (UTF-8)  zero padding to 8 bytes  columns...

The header holds the interned strings, the question specs, the enum names and, per column,
``[name, dtype, offset, length]`` (offset from the first column, 8-byte aligned). Questions
are sorted by output and round, so one output's rounds are one slice; probabilities follow
the same order, quantised to 1/10,000 (65535: none returned). Only base64 characters reach
the HTML, so no log text can close the script element that carries the block.
"""

from __future__ import annotations

import base64
import struct
import zlib
from array import array
from collections.abc import Iterator
from typing import Any

import numpy as np
import orjson

from analysis.loading.viewer.job_rounds import PROBABILITY_SCALE
from analysis.loading.viewer.rounds import JobRounds

__all__ = ["PROBABILITY_SCALE", "pack_rounds"]

_DTYPES = {
    np.dtype("uint8"): "u8",
    np.dtype("int16"): "i16",
    np.dtype("uint16"): "u16",
    np.dtype("uint32"): "u32",
    np.dtype("float32"): "f32",
}


def _np(column: array, dtype: str) -> np.ndarray:
    return np.frombuffer(column, dtype=column.typecode).astype(dtype, copy=False)


_CHUNK = 1 << 14  # questions per slice when probabilities are reordered (bounds memory)
_COUNT = 1 << 20  # questions per slice when they are counted per output
_SORT_PARTS = 16  # the questions are sorted in about this many ranges of outputs


def _sorted_order(
    q_output: np.ndarray, q_round: np.ndarray, q_start: np.ndarray, step: int
) -> np.ndarray:
    """The questions' indices sorted by (output, round), log order within (what
    ``np.lexsort((q_round, q_output))`` gives), sorted ``step`` questions or so at a time
    into one int32 array: lexsort's whole int64 result and its buffers were ~36 MB at 100×.
    ``q_start``: each output's first question in that order, and the count at the end."""
    n, n_outputs = len(q_output), len(q_start) - 1
    order = np.empty(n, np.int32 if n <= np.iinfo(np.int32).max else np.int64)
    low = 0
    while low < n_outputs:
        # The outputs from ``low`` whose questions number at most ``step`` (one at least).
        high = int(np.searchsorted(q_start, q_start[low] + step, side="right")) - 1
        high = min(max(high, low + 1), n_outputs)
        found = np.flatnonzero((q_output >= low) & (q_output < high))  # in log order
        # lexsort is stable: questions of one output and round keep their log order.
        found = found[np.lexsort((q_round[found], q_output[found]))]
        order[q_start[low] : q_start[high]] = found
        low = high
    return order


class _Layout:
    """Questions sorted by (output, round), and their probabilities reordered to match."""

    def __init__(self, r: JobRounds) -> None:
        q_output = _np(r.q_output, "uint32")
        # One byte a question where every spec has under 256 options, indexed by the uint32
        # spec ids as they are: 2.3 million questions at 100×, 18 MB a copy as int64.
        labels = [len(s.labels) for s in r.specs] or [0]
        spec_sizes = np.array(labels, np.uint8 if max(labels) < 256 else np.int32)
        sizes = spec_sizes[_np(r.q_spec, "uint32")]
        self.n_probabilities = int(sizes.sum(dtype=np.int64))
        # Each question's first probability, in log order, summed in place: the int64
        # cumulative sums and their concatenation were ~36 MB at once at 100×.
        wide = self.n_probabilities > np.iinfo(np.int32).max
        self.starts = np.zeros(len(sizes), np.int64 if wide else np.int32)
        np.cumsum(sizes[:-1], dtype=self.starts.dtype, out=self.starts[1:])
        self.sizes = sizes
        # Per output, its questions and probabilities, counted a slice of questions at a
        # time (bincount casts the whole column to int64 and the weights to float64).
        counts = np.zeros(r.n_outputs, np.int64)
        per_output = np.zeros(r.n_outputs, np.int64)
        for first in range(0, len(q_output), _COUNT):
            part = q_output[first : first + _COUNT]
            counts += np.bincount(part, minlength=r.n_outputs)[: r.n_outputs]
            weights = sizes[first : first + _COUNT]
            found = np.bincount(part, weights=weights, minlength=r.n_outputs)[: r.n_outputs]
            per_output += found.astype(np.int64)
        # Questions sorted by output: output k's first is the count of those before it.
        q_start = np.concatenate([[0], np.cumsum(counts)])
        # As the page's columns hold them (uint32), not as int64.
        self.q_start = q_start.astype(np.uint32)
        self.p_start = np.concatenate([[0], np.cumsum(per_output)])[:-1].astype(np.uint32)
        del counts, per_output
        step = max(len(q_output) // _SORT_PARTS, _CHUNK)
        self.order = _sorted_order(q_output, _np(r.q_round, "uint16"), q_start, step)
        self.probabilities = np.frombuffer(r.probabilities, dtype=np.uint16)

    def probability_chunks(self) -> Iterator[np.ndarray]:
        """The (already quantised) probabilities in sorted question order, a slice at a time."""
        for first in range(0, len(self.order), _CHUNK):
            questions = self.order[first : first + _CHUNK]
            sizes = self.sizes[questions].astype(np.int64)
            shift = self.starts[questions] - (np.cumsum(sizes) - sizes)
            gather = np.repeat(shift, sizes) + np.arange(int(sizes.sum()), dtype=np.int64)
            yield self.probabilities[gather]


# Column name -> (dtype, which table's length, the source column or None). Questions are
# reordered by (output, round); ``out_q_start``/``out_p_start`` come from the layout.
_PACKED: dict[str, tuple[str, str]] = {
    **{name: (dtype, "job") for name, dtype in (
        ("job_id", "uint32"), ("job_case", "uint32"), ("job_family", "uint32"),
        ("job_domain", "uint8"), ("job_condition", "uint8"), ("job_order", "uint8"),
        ("job_repeat", "uint16"),
    )},
    **{name: (dtype, "out") for name, dtype in (
        ("out_job", "uint32"), ("out_decoder", "uint8"), ("out_ok", "uint8"),
        ("out_target", "uint32"), ("out_value", "uint32"), ("out_cell", "uint32"),
        ("out_grid", "uint32"), ("out_ape", "float32"), ("out_rounds", "int16"),
        ("out_trace_start", "uint32"), ("out_trace_len", "uint16"),
        ("out_q_start", "uint32"), ("out_p_start", "uint32"),
    )},
    "trace_step": ("uint32", "trace"),
    **{name: (dtype, "q") for name, dtype in (
        ("q_round", "uint16"), ("q_step", "uint32"), ("q_spec", "uint32"),
        ("q_state", "uint32"), ("q_choice", "int16"), ("q_target", "int16"),
        ("q_attempt", "uint8"),
    )},
}  # fmt: skip


def _column(r: JobRounds, lay: _Layout, name: str) -> np.ndarray:
    """One packed column, made when it is compressed (all at once cost ~150 MB at 100×)."""
    dtype, table = _PACKED[name]
    if name == "out_q_start":
        return lay.q_start
    if name == "out_p_start":
        return lay.p_start
    column = _np(getattr(r, name), dtype)
    return column[lay.order] if table == "q" else column


def _header(r: JobRounds, layout: list[list[Any]]) -> dict[str, Any]:
    failed = [
        [job, round_, [list(e) for e in errors]]
        for (job, round_), errors in sorted(r.failed_attempts.items())
    ]
    return {
        "strings": r.strings,
        "specs": [[s.type, s.instructions, list(s.labels), list(s.texts)] for s in r.specs],
        "decoders": r.decoders,
        "domains": r.domains,
        "conditions": r.conditions,
        "orders": r.orders,
        "n_jobs": len(r.job_id),
        "n_outputs": r.n_outputs,
        "probability_scale": PROBABILITY_SCALE,
        "failed": failed,
        "requests_present": r.requests_present,
        "columns": layout,
    }


def pack_rounds(r: JobRounds, level: int = 6) -> str:
    """The base64 text of the gzip'd binary block described in the module docstring."""
    lay = _Layout(r)
    lengths = {
        "job": len(r.job_id),
        "out": r.n_outputs,
        "trace": len(r.trace_step),
        "q": len(r.q_output),
    }
    layout: list[list[Any]] = []
    offset = 0
    for name, (dtype, table) in _PACKED.items():
        length = len(lay.q_start) if name == "out_q_start" else lengths[table]  # n_outputs + 1
        layout.append([name, _DTYPES[np.dtype(dtype)], offset, length])
        offset += (np.dtype(dtype).itemsize * length + 7) // 8 * 8
    layout.append(["p", "u16", offset, lay.n_probabilities])
    header = orjson.dumps(_header(r, layout))
    pad = (-(8 + len(header))) % 8
    # gzip container (wbits 31): what DecompressionStream('gzip') reads.
    packer = zlib.compressobj(level, zlib.DEFLATED, 31)
    chunks = [packer.compress(b"NJV1" + struct.pack("<I", len(header)) + header + b"\0" * pad)]
    del header
    for name in _PACKED:
        column = _column(r, lay, name)
        # Compressed from the array's own buffer: no bytes copies of 2.4 million questions.
        data = np.ascontiguousarray(column.astype(column.dtype.newbyteorder("<"), copy=False))
        chunks.append(packer.compress(data.data))
        chunks.append(packer.compress(b"\0" * ((-data.nbytes) % 8)))
        del column, data
    for part in lay.probability_chunks():
        chunks.append(packer.compress(part.astype("<u2", copy=False).tobytes()))
    del lay  # its order and offsets (~40 MB at 100×) are not needed for the text
    chunks.append(packer.flush())
    # One copy alive at a time, not four (the parts, the whole, its base64, the text).
    block = b"".join(chunks)
    del chunks
    encoded = base64.b64encode(block)
    del block
    return encoded.decode("ascii")
