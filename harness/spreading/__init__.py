"""One run over many processes or machines: the local worker pool, shards run here or in
workers, the Ray launcher, and merging shards back into one run folder.

May import running and everything below it; inside, merging < pool < spread < raylaunch.
"""
