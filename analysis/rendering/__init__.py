"""Rendering: Markdown tables, the JSON objects, figures and the report folder, from the
statistics. The suite modules register their tables and JSON sections when imported."""
