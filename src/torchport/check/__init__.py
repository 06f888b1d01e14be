"""`torchport check`: a read-only gate for CI and pre-commit (see docs/check.md)."""
from .api import CheckResult, check

__all__ = ["CheckResult", "check"]
