"""Guards on the package's shape: no harness/suites imports, layers in order, exported
names in sync."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import analysis
import runfolder

PACKAGE = Path(analysis.__file__).parent
# The run folder is the only contract. scipy is a runtime dependency since the verdict test
# (analysis.statistics.family_test) takes its Student t from it.
FORBIDDEN = {"harness", "suites"}
FORMAT = Path(runfolder.__file__).parent
# The format package sits below both harness and analysis: the standard library and orjson only.
# zstd: compressed logs (runfolder.zlog); the standard library's from Python 3.14 on
# (``compression``), its backport (``backports.zstd``) before.
FORMAT_ALLOWED = set(sys.stdlib_module_names) | {
    "__future__",
    "orjson",
    "runfolder",
    "compression",
    "backports",
}


def _imported_roots(source: str) -> set[str]:
    roots = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            roots |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
    return roots


def test_the_real_package_is_under_test() -> None:
    # tests/analysis must not shadow the package of the same name.
    assert (PACKAGE / "cli.py").is_file() and PACKAGE.parent.name != "tests"


def test_analysis_never_imports_harness_or_suites() -> None:
    files = sorted(PACKAGE.rglob("*.py"))
    assert len(files) > 10
    for path in files:
        bad = _imported_roots(path.read_text()) & FORBIDDEN
        assert not bad, f"{path.name} imports {sorted(bad)}; analysis reads only the run folder"


# The flow runs one way: a module may import its own layer or one listed before it.
LAYERS = ("errors", "loading", "statistics", "rendering", "export", "arguments", "cli", "__init__")


def _module_of(path: Path) -> str:
    return ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)


def _layer(module: str) -> int:
    """Rank of a module inside the package (``analysis.loading.run`` -> loading)."""
    parts = module.removesuffix(".__init__").split(".")
    assert parts[0] == "analysis", module
    return LAYERS.index(parts[1] if len(parts) > 1 else "__init__")


def _internal_imports(path: Path) -> set[str]:
    """The ``analysis.*`` modules that ``path`` imports, relative imports resolved."""
    package = _module_of(path).rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            name = node.module or ""
            if node.level:
                parts = package.split(".")
                base = parts[: len(parts) - node.level + 1]
                name = ".".join([*base, *([node.module] if node.module else [])])
            if name.split(".")[0] == "analysis":
                found.add(name)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == "analysis"}
    return found


def test_layers_import_only_downwards() -> None:
    # errors < loading < statistics < rendering < export < arguments < cli: no import arrow runs back up.
    seen = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        own = _layer(_module_of(path))
        seen.add(own)
        for imported in _internal_imports(path):
            assert _layer(imported) <= own, (
                f"{_module_of(path)} imports {imported}, a later layer; move the shared code down"
            )
    assert seen == set(range(len(LAYERS)))


def test_layer_guard_resolves_imports() -> None:
    assert "analysis.statistics.bootstrap" in _internal_imports(PACKAGE / "statistics" / "diff.py")
    assert "analysis.loading.run" in _internal_imports(PACKAGE / "statistics" / "diff.py")
    assert _layer("analysis.rendering.tables") > _layer("analysis.statistics.metrics")
    assert _layer("analysis.loading.__init__") == _layer("analysis.loading.run")


def test_analysis_reads_the_folder_through_runfolder() -> None:
    # analysis may import runfolder (and does: the one reader, the manifest checks).
    used = set().union(*(_imported_roots(p.read_text()) for p in PACKAGE.rglob("*.py")))
    assert "runfolder" in used and not used & FORBIDDEN


def test_runfolder_imports_neither_harness_nor_analysis() -> None:
    files = sorted(FORMAT.rglob("*.py"))
    assert len(files) >= 5
    for path in files:
        bad = _imported_roots(path.read_text()) - FORMAT_ALLOWED
        assert not bad, f"runfolder/{path.name} imports {sorted(bad)}; stdlib, orjson and zstd only"


def test_guard_detects_imports() -> None:
    assert _imported_roots("import harness.cli\nfrom suites import affine") == {"harness", "suites"}
    assert _imported_roots("from .metrics import x") == set()


def test_exported_members() -> None:
    # Every public name in the namespace is in __all__ and every name in __all__ exists.
    public = {
        name
        for name, value in vars(analysis).items()
        if not name.startswith("_")
        and getattr(value, "__module__", "analysis.x") != "builtins"
        and not isinstance(value, type(analysis))
    }
    assert set(analysis.__all__) == public
    assert len(analysis.__all__) == len(set(analysis.__all__))
    for name in analysis.__all__:
        assert getattr(analysis, name) is not None


def test_modules_stay_small() -> None:
    for path in PACKAGE.rglob("*.py"):
        # A guard, not a cap that splits a concept by name (tests/test_architecture.py).
        assert len(path.read_text().splitlines()) < 500, f"{path.name} is over 500 lines"
