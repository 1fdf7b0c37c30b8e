"""The columns kept in ``RUN/.columns/`` so that a run is read from its logs once: how they
are keyed, written and read back (``column_cache``), and when a run's kept columns are used
instead of reading its logs, and what is kept (``run_columns.cached_columns``)."""
