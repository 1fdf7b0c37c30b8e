"""Loading: a run folder (manifest.json, outputs.jsonl, requests.jsonl) read into frozen
records and numpy column arrays. Imports nothing above it (statistics, rendering).

Here: the run loaded whole (``run.load_run``), a comparison folder's runs (``comparison``),
the manifest's hashes rechecked (``provenance``; the manifest is ``runfolder.Manifest``,
read ``partial``), the display names (``names``). Below, one subpackage per thing loaded,
each importing only those listed before it (and ``names``): ``columns`` (the blocks every reader shares), ``logs`` (each log's own
columns), ``probabilities`` (the answers joined with their outputs' paths), ``reading``
(both logs of a run read together), ``cache`` (the columns kept in ``RUN/.columns/``, and
when), ``viewer`` (the HTML report's job viewer and decision paths)."""
