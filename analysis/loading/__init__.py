"""Loading: a run folder (manifest.json, outputs.jsonl, requests.jsonl) read into frozen
records and numpy column arrays. Imports nothing above it (statistics, rendering)."""
