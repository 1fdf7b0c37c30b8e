"""Each of a run's logs read into its own columns: outputs.jsonl (``outputs``, its line's
fields in ``output_fields``; ``order_free``: which imported decoders ignore the option
order) and requests.jsonl (``exchanges``, a line decoded by ``request_parts``)."""
