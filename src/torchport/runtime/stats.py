"""What the run-time migration did: every redirected API with its count, every CUDA API that had
no counterpart (and how often it was called), no-ops and dropped arguments.

Each patched process keeps one `Stats`.  With a report directory set (TORCHPORT_REPORT_DIR, which
`torchport run --report` sets for the whole process tree) each process writes
`<pid>.json` there at exit; `merge` adds them up into one report.
"""
from __future__ import annotations

import json
import os
import threading
from collections import Counter
from pathlib import Path
from types import FrameType

SCHEMA_VERSION = 1
COUNTERS = {"redirected": "Redirected", "failed": "No counterpart (failed)", "standin": "Neutral values (stand-ins)",
            "noop": "Run as no-ops", "dropped": "Arguments dropped",
            "probed": "Probed, absent on the target (hasattr/getattr answered no)"}


class Stats:
    def __init__(self, target: str, device: str, policy: str, on_missing: str):
        self.target, self.device, self.policy, self.on_missing = target, device, policy, on_missing
        self.redirected: Counter[str] = Counter()   # api -> calls/uses sent to the target
        self.failed: Counter[str] = Counter()       # api -> calls that had no counterpart
        self.noop: Counter[str] = Counter()         # api -> calls run as no-ops (target data says so)
        self.standin: Counter[str] = Counter()      # api -> observing calls answered with a neutral value
        self.dropped: Counter[str] = Counter()      # api -> arguments dropped (e.g. CUDA profiler activity on cpu)
        self.probed: Counter[str] = Counter()       # api -> hasattr/getattr(torch.cuda, X, default) of a name
                                                    # the target lacks
        self.first_call: dict = {}    # api -> the first place in the program's code that used it ("train.py:12")
        self.messages: dict = {}      # api -> why it failed / what was dropped
        self.notes: list = []         # one-off remarks (an env var set too late...)
        self._lock = threading.Lock()

    def hit(self, api: str, counter: str = "redirected", message: str = "") -> None:
        with self._lock:
            getattr(self, counter)[api] += 1
            if message and api not in self.messages:
                self.messages[api] = message
            if api not in self.first_call:
                self.first_call[api] = call_site()

    def to_dict(self) -> dict:
        return {"schema_version": SCHEMA_VERSION, "target": self.target, "device": self.device,
                "policy": self.policy, "on_missing": self.on_missing, "processes": 1,
                "redirected": dict(self.redirected.most_common()), "failed": dict(self.failed.most_common()),
                "noop": dict(self.noop.most_common()),
                "standin": dict(self.standin.most_common()), "dropped": dict(self.dropped.most_common()),
                "probed": dict(self.probed.most_common()), "first_call": dict(sorted(self.first_call.items())),
                "messages": dict(sorted(self.messages.items())), "notes": list(self.notes)}

    def write(self, folder) -> Path:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{os.getpid()}.json"
        path.write_text(json.dumps(self.to_dict(), indent=1) + "\n", encoding="utf-8")
        return path


_LIBRARY_PARTS = (os.sep + "torchport" + os.sep, os.sep + "torch" + os.sep, os.sep + "site-packages" + os.sep,
                  os.sep + "lib" + os.sep + "python", "<frozen")


def call_site() -> str:
    """The first frame of the program's own code on the stack ("train.py:12"), or the first outside torchport and
    torch; '' when there is none."""
    import sys

    frame: FrameType | None = sys._getframe(2)
    fallback = ""
    while frame is not None:
        name = frame.f_code.co_filename
        if not any(part in name for part in _LIBRARY_PARTS):
            rel = os.path.relpath(name) if os.path.isabs(name) else name
            return f"{name if rel.startswith('..') else rel}:{frame.f_lineno}"
        if not fallback and os.sep + "torchport" + os.sep not in name and os.sep + "torch" + os.sep not in name:
            fallback = f"{os.path.basename(name)}:{frame.f_lineno}"
        frame = frame.f_back
    return fallback


def merge(reports: list) -> dict:
    """One report from several processes' reports (counts added, messages and notes united)."""
    if not reports:
        return {}
    out = {k: reports[0][k] for k in ("schema_version", "target", "device", "policy", "on_missing")}
    out["processes"] = sum(r.get("processes", 1) for r in reports)
    for key in COUNTERS:
        total: Counter[str] = Counter()
        for r in reports:
            total.update(r.get(key, {}))
        out[key] = dict(total.most_common())
    out["messages"] = dict(sorted({k: v for r in reports for k, v in r.get("messages", {}).items()}.items()))
    first: dict = {}
    for r in reports:   # any process's first call site of an API (they usually run the same code)
        for api, site in r.get("first_call", {}).items():
            first.setdefault(api, site)
    out["first_call"] = dict(sorted(first.items()))
    out["notes"] = sorted({n for r in reports for n in r.get("notes", [])})
    return out


def markdown(report: dict) -> str:
    lines = [f"# torchport run: {report.get('target')} (device '{report.get('device')}')", "",
             f"- processes: {report.get('processes')}; is_available policy: {report.get('policy')}; "
             f"APIs without a counterpart: {report.get('on_missing')}", ""]
    for key, title in COUNTERS.items():
        rows = report.get(key) or {}
        if rows:
            lines += [f"## {title}", "", "| API | Count | First call | Note |", "|---|---|---|---|"]
            lines += [f"| `{api}` | {n} | {report.get('first_call', {}).get(api, '')} | {report['messages'].get(api, '')} |"
                      for api, n in rows.items()]
            lines.append("")
    if report.get("notes"):
        lines += ["## Notes", ""] + [f"- {n}" for n in report["notes"]] + [""]
    return "\n".join(lines)
