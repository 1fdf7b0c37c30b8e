"""A run's two logs read together, one pass over each, into the columns of ``logs`` and
``probabilities``: side by side with a second process on two or more cores
(``side_by_side``), lines that repeat taken unparsed (``repeated_lines``), and the reader
that load_run's columns come from (``both_logs``). Keeps nothing: that is ``cache``."""
