"""Each package's ``__all__`` lists exactly its public names (as httpx checks its own).

A public name is one defined in the package or its submodules and bound in the package
namespace without a leading underscore; helpers imported from elsewhere are not exports.
"""

from __future__ import annotations

import importlib
import inspect
from types import ModuleType

import pytest

PACKAGES = (
    "harness",
    "harness.calling",
    "harness.protocol.decoders",
    "harness.backends",
    "harness.backends.http",
    "harness.serve",
    "harness.wire",
    "suites",
)


def own_public_names(package: ModuleType) -> set[str]:
    names = set()
    for name, value in vars(package).items():
        if name.startswith("_") or inspect.ismodule(value):
            continue
        home = getattr(value, "__module__", None)
        if home is None or home == package.__name__ or home.startswith(package.__name__ + "."):
            if name.isupper() and not isinstance(value, dict):
                continue  # plain constants (e.g. a help string) are not API
            names.add(name)
    return names


@pytest.mark.parametrize("name", PACKAGES)
def test_all_lists_every_public_member(name: str) -> None:
    package = importlib.import_module(name)
    exported = list(package.__all__)
    assert len(set(exported)) == len(exported)
    for member in exported:
        assert hasattr(package, member), f"{name}.__all__ names missing {member!r}"
    assert set(exported) == own_public_names(package)
