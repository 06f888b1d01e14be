"""The semantic converter: rules, the per-file pipelines (Python, shell) and the run over a tree."""
