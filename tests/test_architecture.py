"""The package graph runs one way, and modules stay small.

    runfolder  <-  harness  <-  suites            (analysis: beside, runfolder only)

``runfolder`` is the format, at the bottom; ``harness`` imports it; ``suites`` import the
harness and are found by it through entry points (``harness.protocol.registry``), never imported;
``analysis`` reads run folders through ``runfolder`` and never imports the harness or the
suites (its own guards live in ``tests/analysis/test_analysis_architecture.py``). Inside the
harness, layers run from errors and grid up to the session, the commands and the CLI: a
module may import its own layer or one below, never one above.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIRST_PARTY = {"runfolder", "harness", "suites", "analysis", "simstudy", "benchmarks", "tests"}

# What each package may import of the others (the harness's CLI hands the analysis commands
# to analysis.cli whole, and the sequential comparison asks analysis's rule after each look:
# the two arrows from harness to analysis; see ALLOWED_EXTRA).
PACKAGES = {
    "runfolder": set(),
    "harness": {"runfolder"},
    "suites": {"harness"},
    "analysis": {"runfolder"},
    "simstudy": {"runfolder", "harness", "analysis"},
}
ALLOWED_EXTRA = {
    ("harness/cli.py", "analysis"),
    ("harness/cli.py", "simstudy"),
    # compare --sequential asks analysis.statistics, after each look, whether the rule has
    # stopped every cell (the decision is analysis's; the harness only stops asking).
    ("harness/comparing/sequential.py", "analysis"),
}  # also hands a comparison to analysis.cli

# Harness layers, lowest first. A module's layer is that of the longest name here that starts
# its own (``protocol.decoders.tree`` is ``protocol.decoders``'s); a package's folders are the
# concepts (protocol -> wire -> backends -> calling -> cache -> serve -> running -> spreading ->
# comparing -> commands), and inside a concept its modules keep an order of their own.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors",),
    ("progress", "collector"),
    ("protocol", "protocol.grid", "protocol.arith"),
    ("protocol.prompts", "protocol.cases"),
    ("protocol.meaning",),
    ("protocol.decoders",),
    ("protocol.registry",),
    ("wire",),
    ("backends",),
    ("calling",),
    ("cache",),
    ("serve",),
    ("running", "running.sharding", "running.naming", "running.jobs"),
    ("running.check", "running.recorder", "running.replay", "running.settings"),
    ("running.scheduler", "running.dryrun", "running.folder"),
    ("running.interrupts", "running.refusals"),
    ("running.wiring",),
    ("running.session",),
    ("running.probe",),
    ("spreading", "spreading.merging"),
    ("spreading.pool",),
    ("spreading.spread",),
    ("spreading.raylaunch",),
    ("comparing",),
    ("config",),
    ("commands",),
    ("cli", "__init__"),
)
RANK = {name: rank for rank, names in enumerate(LAYERS) for name in names}
# At most this many modules at harness/'s root: the front door, the CLI entry, errors and
# the like; everything that belongs to a concept lives in its folder.
ROOT_MODULES = {"__init__", "cli", "errors", "progress", "collector"}

# A guard against Inspect-sized modules, not a cap: at 400 it forced splits by name
# (html / html_parts / html_data) where one concept had grown (issue 40, item 7).
MAX_LINES = 500


def _imports(path: Path) -> set[str]:
    """Every module ``path`` imports (absolute names; relative imports resolved)."""
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            name = node.module or ""
            if node.level:
                parts = package.split(".")
                base = parts[: len(parts) - node.level + 1]
                name = ".".join([*base, *([node.module] if node.module else [])])
            found.add(name)
    return found


def _sources(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


def _layer(module: str) -> int:
    parts = module.split(".")
    assert parts[0] == "harness", module
    if len(parts) == 1:
        return RANK["__init__"]
    for end in range(len(parts), 1, -1):  # the longest name in LAYERS that starts it
        name = ".".join(parts[1:end])
        if name in RANK:
            return RANK[name]
    raise AssertionError(f"{module} has no layer: add it to LAYERS in {__file__}")


def test_packages_import_only_downwards() -> None:
    for package, allowed in PACKAGES.items():
        files = _sources(package)
        assert files, package
        for path in files:
            relative = path.relative_to(ROOT).as_posix()
            roots = {name.split(".")[0] for name in _imports(path)} & FIRST_PARTY
            bad = roots - allowed - {package} - {r for f, r in ALLOWED_EXTRA if f == relative}
            assert not bad, f"{relative} imports {sorted(bad)}; {package} may import {allowed}"


def test_the_harness_never_names_a_suite_module() -> None:
    # Found through the registry only: no import, static or lazy, of the suites package.
    for path in _sources("harness"):
        assert not any(n.split(".")[0] == "suites" for n in _imports(path)), path


def test_harness_layers_import_only_downwards() -> None:
    seen = set()
    for path in _sources("harness"):
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        own = _layer(module)
        seen.add(own)
        for imported in _imports(path):
            if imported.split(".")[0] != "harness":
                continue
            assert _layer(imported) <= own, (
                f"{module} imports {imported}, a higher layer; move the shared code down"
            )
    assert seen == set(range(len(LAYERS)))


# Benchmarks that measure the internals themselves, by design (bench_overhead swaps the HTTP
# backend's sender for a replay and times the steps of an exchange; bench_http runs the
# default sender bare, and the harness over the sender it replaced).
INSTRUMENTS = frozenset({"bench_overhead.py", "bench_http.py"})


def test_benchmarks_use_the_public_api_only() -> None:
    # The benchmarks run suites the way a user's code does: through harness.__all__ (and the
    # wire translations' own __all__). Their child processes' code is in strings, so the
    # source text is read, not the syntax tree.
    import harness
    import harness.wire

    public = {"harness": set(harness.__all__), "harness.wire": set(harness.wire.__all__)}
    for path in _sources("benchmarks"):
        if path.name in INSTRUMENTS:
            continue
        source = path.read_text()
        assert not re.search(r"^\s*import harness\.", source, re.M), path.name
        for module, names in re.findall(r"^\s*from (harness\S*) import ([\w, ]+)$", source, re.M):
            assert module in public, f"{path.name} imports {module}, not the public API"
            imported = {name.strip() for name in names.split(",")}
            assert imported <= public[module], f"{path.name}: {imported - public[module]}"


def test_every_benchmark_imports() -> None:
    # make bench is not part of make test: a module it runs that no longer imports (a moved
    # or deleted harness module) is caught here instead.
    import importlib

    for path in _sources("benchmarks"):
        importlib.import_module(".".join(path.relative_to(ROOT).with_suffix("").parts))


def test_modules_stay_small() -> None:
    for package in ("runfolder", "harness", "suites"):
        for path in _sources(package):
            lines = len(path.read_text().splitlines())
            assert lines < MAX_LINES, f"{path.relative_to(ROOT)} has {lines} lines"


def test_the_root_holds_no_concept() -> None:
    # The folders draw the flow; the root keeps the front door, the CLI entry, errors and
    # the cross-cutting pieces the lowest layers share (progress display, the collector).
    found = {path.stem for path in (ROOT / "harness").glob("*.py")}
    assert found == ROOT_MODULES, f"move {sorted(found - ROOT_MODULES)} into a concept folder"
    assert len(found) <= 10


def test_every_concept_package_says_what_it_owns_and_may_import() -> None:
    for init in sorted((ROOT / "harness").glob("*/__init__.py")):
        doc = ast.get_docstring(ast.parse(init.read_text())) or ""
        assert "may import" in doc.lower(), f"{init.relative_to(ROOT)}: say what it may import"


def test_the_guards_read_imports() -> None:
    assert "harness.calling" in _imports(ROOT / "harness" / "running" / "scheduler.py")
    assert (
        _layer("harness.running.session")
        > _layer("harness.running.scheduler")
        > _layer("harness.calling")
    )
    assert _layer("harness.calling.caller") > _layer("harness.backends.base")
    assert _layer("harness.protocol.decoders.tree") == RANK["protocol.decoders"]
    assert _layer("harness") == RANK["__init__"]
    assert sys.modules[__name__].__doc__
