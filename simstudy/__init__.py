"""Studies of the built-in sim: its figures beside the paper's, its knobs fitted to a run.

It stands on both sides of the run folder: it runs suites against the sim in process
(``harness``) and measures them with the analysis package's own metrics (``analysis``).
Nothing imports it: ``harness.cli`` finds its commands through the ``numericjev.commands``
entry points (pyproject.toml), as it finds suites.
"""
