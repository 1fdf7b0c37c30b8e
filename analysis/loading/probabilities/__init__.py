"""The Probabilities section's data: outputs.jsonl read as interval paths (``interval_paths``,
``interval_steps``, ``path_table``; the chain decoders' units in ``chain_units``),
requests.jsonl's questions reduced to integers (``asked``), and the two joined into each
answer's outcome and its option-order pair (``answers``, kept as ``answer_log``)."""
