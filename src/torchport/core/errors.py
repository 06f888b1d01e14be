"""The error type that the CLI turns into a one-line message and exit code 2."""


class UsageError(Exception):
    """Bad input from the user: unknown target, missing path, unsafe output location..."""
