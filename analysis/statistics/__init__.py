"""Statistics: metrics, family bootstrap, run facts, run-to-run diffs, the verdict test
(``family_test``: a paired difference over families with its interval and p, for compare,
diff and power; ``skew_tests``: the skew-aware candidates it was chosen over), the sequential
rule, and the suites' own computations, from loaded arrays (no I/O). Every decision a
comparison makes is made here, once, and kept as a value: the cell verdict and the release
gate (``decisions``), the outside-the-promise mark (``promise``) and the sequential rule's
stop (``looks``), all on ``comparison.Comparison``. Imports loading, never rendering."""
