"""The blocks every reader of the logs builds its columns from (no I/O): integer columns
in the narrowest type (``compact``), rows gathered a chunk at a time (``row_chunks``),
strings interned once (``interning``), recorded decimals read exactly (``exact``)."""
