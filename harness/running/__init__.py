"""One run in one process: jobs (a case's decoders, round by round), the oracle check, the
scheduler, the recorder and run folder, replay for resume, interrupts, dry runs, the session, and the probe before a run.

May import protocol, wire, backends, calling and cache; inside, sharding/naming/jobs <
check/recorder/replay < scheduler/dryrun/folder < interrupts < wiring < session < probe.
"""
