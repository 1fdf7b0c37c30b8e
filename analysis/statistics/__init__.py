"""Statistics: metrics, family bootstrap, run facts, run-to-run diffs and the suites' own
computations, from loaded arrays (no I/O). Imports loading, never rendering."""
