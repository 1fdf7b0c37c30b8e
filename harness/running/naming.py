"""The names of the folders the harness creates: a run's, and a comparison's cells.

A name says what a person needs to tell runs apart at a glance, the suite, the model and
its simulated "version", and nothing that only says how it was reached: not the server's
address, timeouts, retries, price or ``top_logprobs`` (the manifest records all of those).
Names are ASCII letters, digits and ``-._`` only, so that they need no quoting in a shell
or a Makefile, and short enough for any file system.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from harness.backends import GGUF_PREFIX, ModelSpec
from runfolder import RUNS_ROOT, unique_folder

MODEL_CHARS = 60  # the model's part of a name at most (a file name may hold 255 bytes)


def safe_name(text: str) -> str:
    """``text`` fit for a folder name: ASCII letters, digits and ``-._``; anything else ``_``."""
    return "".join(ch if ch.isascii() and (ch.isalnum() or ch in "-._") else "_" for ch in text)


def folder_model_name(spec: ModelSpec) -> str:
    """The model's part of a folder name: its name, its sim knobs (sorted) and a wire other
    than the default, e.g. ``sim``, ``sim_confusion_0.3_seed_3``,
    ``gpt-4o-mini_openai-chat``; a GGUF file by its file name (``gguf_SmolLM2-135M``)."""
    name = spec.name
    if spec.is_gguf:
        name = "gguf_" + Path(name.removeprefix(GGUF_PREFIX)).stem
    parts = [name, *(f"{key}_{value}" for key, value in sorted(spec.sim.items()))]
    if spec.wire != "systemone":
        parts.append(spec.wire)
    return safe_name("_".join(parts))[:MODEL_CHARS]


def default_run_folder(suite: str, model: str, root: Path = RUNS_ROOT) -> Path:
    """Create ``runs/<suite>-<model>-<UTC time>`` (``-2``, ``-3``, ... when a run started in
    the same second already has it) and return it, empty. ``model``: ``folder_model_name``
    of a spec, or a backend's own name."""
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    return unique_folder(root, f"{suite}-{safe_name(model)[:MODEL_CHARS]}-{stamp}")


def cell_folder_name(suite: str, index: int, spec: ModelSpec) -> str:
    """A comparison cell's folder: ``<suite>-m<index>-<model>`` (``affine-m2-sim_seed_7``):
    the index keeps two models whose names would read alike apart. Recorded in
    ``compare.json`` when the comparison is made; resume reads it there, never anew."""
    return f"{suite}-m{index}-{folder_model_name(spec)}"
