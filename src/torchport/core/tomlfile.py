"""The TOML parser: tomllib, or tomli before Python 3.11.  Imported inside the functions that read
TOML, so a run whose data comes from the cache (core/cache.py) never loads it."""
from __future__ import annotations

try:  # Python 3.11+
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - exercised on 3.9/3.10
    import tomli as tomllib  # type: ignore[no-redef]

__all__ = ["tomllib"]
