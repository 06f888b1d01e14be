"""The command layer: convert, analyze, port (port-ext) and check each run an engine over a tree and return a
typed result (core.pipeline); migrate composes them.  A command writes the output tree, never a report: the
writers in report/ read its result.  Nothing here imports report/ or cli/."""
