"""Guards on the package's shape: no harness/suites imports, exported names in sync."""

from __future__ import annotations

import ast
from pathlib import Path

import analysis

PACKAGE = Path(analysis.__file__).parent
FORBIDDEN = {"harness", "suites", "scipy"}  # the run folder is the only contract; scipy: tests only


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
    files = sorted(PACKAGE.glob("*.py"))
    assert len(files) > 10
    for path in files:
        bad = _imported_roots(path.read_text()) & FORBIDDEN
        assert not bad, f"{path.name} imports {sorted(bad)}; analysis reads only the run folder"


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
    for path in PACKAGE.glob("*.py"):
        assert len(path.read_text().splitlines()) < 400, f"{path.name} is over 400 lines"
