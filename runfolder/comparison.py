"""``compare.json``: a comparison folder's record of which run folders it holds.

A comparison folder (``numericjev compare``) holds one ordinary run folder per model ×
suite, the *cells*, and this file, written once and atomically before the first cell
starts. It names the models (the first is the baseline every later one is compared with),
the suites, each cell's folder and how the cells are started, so that ``numericjev resume``
can continue the whole comparison (a cell killed before it began is started then) and
``analysis`` can summarise it. Each cell's own manifest says what actually ran.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypedDict

from runfolder.errors import RunFolderError
from runfolder.layout import COMPARISON, FORMAT_VERSION
from runfolder.manifest import Fields, encode_document, read_document, write_document

_HINT = "pass a folder written by `numericjev compare`"


class ComparisonCell(TypedDict):
    """One model × suite run of a comparison."""

    suite: str
    model: str  # the model spec as given, e.g. ``sim:seed=7``
    folder: str  # the cell's run folder, relative to the comparison folder


class ComparisonRecord(TypedDict):
    """``compare.json``."""

    format_version: int
    comparison_id: str
    created_utc: str  # ISO 8601, seconds
    models: list[str]  # model specs, the baseline first
    suites: list[str]
    suite_params: dict[str, dict[str, str]]  # per suite, as given (KEY=VALUE text)
    cells: list[ComparisonCell]  # run in this order: suite by suite, models in order
    options: dict[str, Any]  # how cells are started (timeout, retries, price, URL, limits)


MIN_LOOK = 5  # no sequential look before 5 families: a t with fewer df is no test


def look_sizes(n_families: int, n_looks: int) -> tuple[int, ...]:
    """Families a sequential comparison (``options.sequential``) has asked by each look:
    equal shares of the suite's families in the plan's order, none before ``MIN_LOOK``."""
    return tuple(
        sorted(
            {
                min(n_families, max(MIN_LOOK, round(n_families * (i + 1) / n_looks)))
                for i in range(n_looks)
            }
        )
    )


def is_comparison(folder: Path) -> bool:
    """True when ``folder`` holds a ``compare.json``."""
    return (folder / COMPARISON).is_file()


def write_comparison(folder: Path, record: ComparisonRecord) -> None:
    """Write ``compare.json`` atomically (temp file, fsync, rename); refuses to replace one."""
    if is_comparison(folder):
        raise RunFolderError(
            f"{folder} already holds a comparison; continue it with: numericjev resume {folder}"
        )
    write_document(folder / COMPARISON, encode_document(record, COMPARISON))


def load_comparison(folder: Path) -> ComparisonRecord:
    """The checked ``compare.json`` of a comparison folder; each problem names its field."""
    path = folder / COMPARISON
    if not path.is_file():
        raise RunFolderError(f"{folder} has no {COMPARISON}, so it is not a comparison; {_HINT}")
    raw = read_document(path, "it is written atomically, so restore the original file")
    f = Fields(raw, str(path))
    version = f.integer("format_version")
    if not 1 <= version <= FORMAT_VERSION:
        raise RunFolderError(
            f"{path} has format_version {version}; this numericjev reads version "
            f"{FORMAT_VERSION} — upgrade numericjev to read it"
        )
    cells: list[ComparisonCell] = []
    listed = f.get("cells")
    if not isinstance(listed, list) or not listed:
        raise RunFolderError(f"{path}: field 'cells' must be a non-empty list; got {listed!r}")
    for i, item in enumerate(listed):
        if not isinstance(item, dict):
            raise RunFolderError(f"{path}: field 'cells[{i}]' must be an object; got {item!r}")
        cell = Fields(item, str(path), f"cells[{i}].")
        name = cell.text("folder")
        if not name or Path(name).name != name or name in (".", ".."):
            raise RunFolderError(
                f"{path}: field 'cells[{i}].folder' must name a folder inside the comparison; "
                f"got {name!r}"
            )
        cells.append({"suite": cell.text("suite"), "model": cell.text("model"), "folder": name})
    models, suites = list(f.names("models")), list(f.names("suites"))
    for i, cell_record in enumerate(cells):
        if cell_record["model"] not in models or cell_record["suite"] not in suites:
            raise RunFolderError(
                f"{path}: cells[{i}] names a model or suite that 'models'/'suites' do not list"
            )
    params = f.mapping("suite_params")
    for suite, values in params.items():
        if not isinstance(values, dict) or not all(isinstance(v, str) for v in values.values()):
            raise RunFolderError(
                f"{path}: field 'suite_params.{suite}' must map names to text values"
            )
    return {
        "format_version": version,
        "comparison_id": f.text("comparison_id"),
        "created_utc": f.text("created_utc"),
        "models": models,
        "suites": suites,
        "suite_params": params,
        "cells": cells,
        "options": f.mapping("options"),
    }
