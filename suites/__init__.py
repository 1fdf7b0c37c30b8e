"""The paper's suites: seeded case generation and the prompts' subjects.

Each module builds ``harness.protocol.cases.Suite`` values and names its ``SuiteBuilder``; the
harness finds them through the ``numericjev.suites`` entry points in ``pyproject.toml``
(``harness.protocol.registry``) and never imports this package. Load one with
``harness.load_suite("affine")``.
"""

__all__: list[str] = []
