"""Many models × suites, each an ordinary run folder, in one comparison folder.

May import running and everything below it; the statistics are ``analysis``'s: the CLI hands
a finished comparison folder over, and ``sequential`` asks ``analysis.statistics`` after each
look whether the rule has stopped every cell.
"""
