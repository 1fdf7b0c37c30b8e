"""Many models × suites, each an ordinary run folder, in one comparison folder.

May import running and everything below it; the statistics are ``analysis``'s, reached only
through the CLI, which hands a comparison folder over (and, for ``compare --sequential``,
judges each look: ``harness.comparing.sequential``). ``cells`` starts or resumes one cell.
"""
