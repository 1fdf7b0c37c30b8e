"""File names of a run folder and the format version the manifest declares."""

from __future__ import annotations

FORMAT_VERSION = 1  # sessions.jsonl is an optional addition: older folders stay version 1

MANIFEST = "manifest.json"  # written once, atomically, before the first request
CASES = "cases.json"  # the case set the manifest's case_hash hashes (absent in older runs)
REQUESTS = "requests.jsonl"  # one line per exchange attempt
OUTPUTS = "outputs.jsonl"  # one line per (job, decoder); the last line for a pair wins
SESSIONS = "sessions.jsonl"  # one line per `run` or `resume` invocation (absent in older runs)
LOCK = ".lock"  # flock'ed by the one process allowed to append
TOTALS = "totals.json"  # the request totals as the last session left them (absent in older runs)
# A comparison folder holds this instead of a manifest, and one run folder per model x suite.
COMPARISON = "compare.json"
