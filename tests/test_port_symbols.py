"""Symbol audit: every PyTorch C++ name `port-ext` can write for musa and hip exists in the torch headers.

The names come from the mapping data (kb/port/<target>.json values in at::/c10::/torch:: or AT_/C10_/TORCH_
form, every value of the curated <target>.pytorch.toml, the TORCH_LIBRARY_IMPL dispatch key, the names the
review messages tell users to map to) and from porting tests/fixtures/port_compile/receivers.cu, whose calls
are annotated with the class their receiver really is.  Each is looked up, as plain text, in the include/ tree
of the installed torch (found without importing it): a macro needs its #define, a name its declaration in a
header that opens a namespace it is visible from, a scoped name (DeviceType::PrivateUse1) a header defining
the scope, a method the body of its class.  Names of the vendor's own (c10::musa::, AT_MUSA_CHECK, __MUSACC__,
musa*, hip*) belong to torch_musa, the vendor SDK or ROCm builds of PyTorch and are not in this tree.

Run as a script for the counts: python tests/test_port_symbols.py
"""
import importlib.util
import re
import sys
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from torchport.core.tomlfile import tomllib  # noqa: E402
from torchport.porting.engine import KB_PORT, load_map, port_text  # noqa: E402

PROBE = ROOT / "tests" / "fixtures" / "port_compile" / "receivers.cu"
TARGETS = ("musa", "hip")
VENDOR = {"musa": re.compile(r"(?i)musa"), "hip": re.compile(r"(?i)hip")}
# Where a name qualified with a namespace may be declared: `namespace at { using namespace c10; }`
# (torch/headeronly/macros/Macros.h:163) and `namespace torch { using namespace at; }` (torch/types.h:37).
VISIBLE = {"c10": ("c10",), "at": ("at", "c10"), "torch": ("torch", "at", "c10"), None: ("torch", "at", "c10")}


def _torch_include():
    spec = importlib.util.find_spec("torch")  # locates the package without importing it
    if spec is None or not spec.submodule_search_locations:
        return None
    include = Path(list(spec.submodule_search_locations)[0]) / "include"
    return include if include.is_dir() else None


INCLUDE = _torch_include()
pytestmark = pytest.mark.skipif(INCLUDE is None, reason="no torch with include/ installed")


@cache
def headers() -> dict:
    return {p.relative_to(INCLUDE).as_posix(): p.read_text(encoding="utf-8", errors="replace")
            for p in INCLUDE.rglob("*") if p.suffix in (".h", ".hpp", ".cuh") and p.is_file()}


@cache
def code(rel: str) -> str:
    """A header without its comments."""
    return re.sub(r"//[^\n]*|/\*.*?\*/", " ", headers()[rel], flags=re.DOTALL)


def files_with(word: str) -> list:
    return [rel for rel, text in headers().items() if word in text and re.search(rf"\b{word}\b", code(rel))]


def declared(name: str) -> bool:
    """`name` (AT_X, at::kX, DeviceType::X, c10::cuda::f...) is declared in the headers (plain text)."""
    parts = [p.strip() for p in name.split("::")]
    ns = parts[0] if len(parts) > 1 and parts[0] in VISIBLE else None
    rest = parts[1:] if ns else parts
    word = rest[-1]
    if len(rest) == 1 and re.fullmatch(r"(?:AT|C10|TORCH)_\w+", word):
        return any(re.search(rf"#\s*define\s+{word}\b", code(rel)) for rel in files_with(word))
    for rel in files_with(word):
        if len(rest) > 1:  # the header defines the scope (an enum, class, struct or namespace)
            ok = re.search(rf"\b(?:enum\s+class|enum|class|struct|namespace)\s+(?:\w+\s+)*(?:[\w:]*::)?{rest[-2]}\b",
                           code(rel))
        else:
            ok = re.search(rf"\bnamespace\s+(?:{'|'.join(VISIBLE[ns])})\b", code(rel))
        if ok:
            return True
    return False


def class_body(cls: str, header: str) -> str:
    """The body of class `cls` in `header` (braces matched), or '' when the header does not define it."""
    if header not in headers():
        return ""
    text, short = code(header), cls.rsplit("::", 1)[-1]
    m = re.search(rf"\b(?:class|struct)\s+(?:[A-Z0-9_]+\s+)*{short}\b(?:\s+final)?\s*(?::[^;{{]*)?\{{", text)
    if not m:
        return ""
    depth = 0
    for i in range(m.end() - 1, len(text)):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth == 0:
            return text[m.end():i]
    return ""


def has_method(cls: str, method: str, classes: dict) -> bool:
    return bool(re.search(rf"\b{method}\s*\(", class_body(cls, classes.get(cls, ""))))


def supplement(target: str) -> dict:
    return tomllib.loads((KB_PORT / f"{target}.pytorch.toml").read_text(encoding="utf-8"))


def emitted_names(target: str) -> tuple:
    """(PyTorch names port-ext can write for `target`, names of the vendor's own)."""
    pmap, extra = load_map(target), supplement(target)
    names = set(extra.get("identifiers", {}).values())
    names |= {v for v in pmap.identifiers.values() if re.match(r"(?:at|c10|torch)::|(?:AT|C10|TORCH)_", v)}
    if pmap.dispatch_key:  # TORCH_LIBRARY_IMPL(ns, k, m) expands to c10::DispatchKey::k (torch/library.h)
        names.add(f"c10::DispatchKey::{pmap.dispatch_key}")
    for why in pmap.review.values():  # what the review messages tell users to map to
        names |= set(re.findall(r'-m \{\\?"\w+\\?": \\?"(\w+)\\?"\}', why))
    vendor = {n for n in names if VENDOR[target].search(n)}
    return sorted(names - vendor), sorted(vendor)


def audit_names(names) -> list:
    return [f"{n}: not declared in {INCLUDE}" for n in names if not declared(n)]


def audit_methods(methods: dict, receivers: dict) -> list:
    """Each method mapping: every class it is applied to declares the new method, and every other class the
    receiver table knows does not (else the porter would leave a valid call for nothing)."""
    classes, problems = receivers.get("classes", {}), []
    for old, spec in methods.items():
        for cls in classes:
            has = has_method(cls, spec["new"], classes)
            if cls in spec["valid"] and not has:
                problems.append(f"{cls} ({classes.get(cls)}) has no {spec['new']}(): {old} -> {spec['new']} "
                                f"must not be applied to it")
            elif cls not in spec["valid"] and has:
                problems.append(f"{cls} has {spec['new']}() but the mapping of {old} leaves it")
        problems += [f"{cls}: not in receivers.toml [classes]" for cls in spec["valid"] if cls not in classes]
    return problems


def audit_receivers(receivers: dict) -> list:
    """The receiver table's facts: each class is defined in its header, each method returns its class, each
    type is (or derives from) its class."""
    classes, problems = receivers.get("classes", {}), []
    for cls, header in classes.items():
        if not class_body(cls, header):
            problems.append(f"{cls}: not defined in {header}")
    for method, cls in receivers.get("returns", {}).items():
        short = cls.rsplit("::", 1)[-1]
        if not any(re.search(rf"\b{short}\s*[&*]?\s*{method}\s*\(", code(rel)) for rel in files_with(method)):
            problems.append(f"no header declares {short} {method}()")
    for spelled, cls in receivers.get("types", {}).items():
        short, name = cls.rsplit("::", 1)[-1], spelled.rsplit("::", 1)[-1]
        if name != short and not any(
                re.search(rf"\b(?:class|struct)\s+(?:[A-Z0-9_]+\s+)*{name}\s*:\s*public\s+(?:[\w:]*::)?{short}\b",
                          code(rel)) for rel in files_with(name)):
            problems.append(f"{spelled} is neither {cls} nor derived from it")
    return problems


def audit_ported_receivers(text: str, receivers: dict, methods: dict) -> list:
    """In ported text whose lines end in `// class: C` (the receiver's real class), each renamed method call
    is on a class that has the method."""
    classes, problems = receivers.get("classes", {}), []
    for line_no, line in enumerate(text.splitlines(), 1):
        real = re.search(r"// class: (\S+)", line)
        for spec in methods.values():
            if real and re.search(rf"(?:\.|->)\s*{spec['new']}\s*\(", line) and \
                    not has_method(real.group(1), spec["new"], classes):
                problems.append(f"line {line_no}: {spec['new']}() called on {real.group(1)}, which has none")
    return problems


def port_probe(pmap) -> tuple:
    fp = port_text("receivers.cu", PROBE.read_text(encoding="utf-8"), pmap, lambda rel, path: None)
    return fp.new_text, fp.findings


# ---------------------------------------------------------------- the audit
@pytest.mark.parametrize("target", TARGETS)
def test_every_pytorch_name_port_ext_writes_is_declared_in_the_torch_headers(target):
    names, vendor = emitted_names(target)
    assert names, "nothing audited"
    assert audit_names(names) == []


def test_method_mappings_apply_only_to_classes_that_have_the_new_method():
    pmap = load_map("musa")
    assert pmap.methods, "musa maps is_cuda"
    assert audit_methods(pmap.methods, pmap.receivers) == []
    assert audit_receivers(pmap.receivers) == []


def test_the_ported_probe_calls_no_method_its_receiver_lacks():
    pmap = load_map("musa")
    new, findings = port_probe(pmap)
    assert audit_ported_receivers(new, pmap.receivers, pmap.methods) == []
    left = {f.line for f in findings if f.rule == "TP955" and f.old == "is_cuda"}
    for line_no, line in enumerate(new.splitlines(), 1):
        if re.search(r"(?:\.|->)\s*is_cuda\s*\(", line):
            assert line_no in left, f"line {line_no}: is_cuda() call left and not reported"


# ---------------------------------------------------------------- the audit can fail
def test_audit_catches_a_method_mapped_onto_a_class_without_it():
    receivers = load_map("musa").receivers
    bad = {"is_cuda": {"new": "is_privateuseone", "valid": ["at::TensorBase", "at::DeprecatedTypeProperties"]}}
    problems = audit_methods(bad, receivers)
    assert any(p.startswith("at::DeprecatedTypeProperties (ATen/core/DeprecatedTypeProperties.h) has no "
                            "is_privateuseone()") for p in problems), problems
    wrong = dict(receivers, returns={"type": "c10::Device"}, types={"Tensor": "c10::Device"})
    assert audit_receivers(wrong) == ["no header declares Device type()", "Tensor is neither c10::Device nor "
                                                                           "derived from it"]


def test_audit_catches_invented_names():
    invented = ["at::kPrivateUse2", "c10::DeviceType::PrivateUse9", "AT_DISPATCH_FLOATING_TYPES_AND_HALF2",
                "c10::DispatchKey::PrivateUseOne", "torch::is_privateuseone_tensor"]
    assert [p.split(":")[0] for p in audit_names(invented + ["at::kPrivateUse1"])] == [
        n.split(":")[0] for n in invented]


def test_audit_catches_the_porter_renaming_on_the_wrong_receiver():
    """The porter told that `.type()` returns a tensor (as the guide's substring rule assumes) writes
    x.type().is_privateuseone(): the audit of its output names that line."""
    pmap = load_map("musa")
    pmap.receivers = dict(pmap.receivers, returns=dict(pmap.receivers["returns"], type="at::TensorBase"))
    new, _ = port_probe(pmap)
    assert "x.type().is_privateuseone()" in new
    problems = audit_ported_receivers(new, pmap.receivers, pmap.methods)
    assert problems == ["line 14: is_privateuseone() called on at::DeprecatedTypeProperties, which has none",
                        "line 18: is_privateuseone() called on at::DeprecatedTypeProperties, which has none"]


if __name__ == "__main__":
    import time

    start = time.perf_counter()
    for t in TARGETS:
        names, vendor = emitted_names(t)
        print(f"{t}: {len(names)} PyTorch names audited, {len(audit_names(names))} missing: {', '.join(names)}")
        print(f"{t}: {len(vendor)} vendor names not audited: {', '.join(vendor)}")
    pmap = load_map("musa")
    pairs = [(old, cls) for old in pmap.methods for cls in pmap.receivers["classes"]]
    print(f"musa: {len(pairs)} method/class pairs audited, {len(audit_methods(pmap.methods, pmap.receivers))} wrong; "
          f"receiver table: {len(audit_receivers(pmap.receivers))} wrong; probe: "
          f"{len(audit_ported_receivers(port_probe(pmap)[0], pmap.receivers, pmap.methods))} bad calls")
    print(f"{time.perf_counter() - start:.1f} s")
