"""Every value that becomes code is checked when its file loads: user rules (-r), target files (--to FILE.toml)
and port-ext maps (-m).  A bad value, or a hostile file (NaN, huge numbers, deep nesting, wrong types, Latin-1),
is one line on stderr naming the file and the key, exit 2; good values (the bundled targets, the documented
examples) still convert."""
import contextlib
import io
import json
import os
import re
import subprocess
import sys
from itertools import combinations

import pytest
from conftest import ROOT

from torchport.backends import available_targets, load_target
from torchport.cli import main
from torchport.converter.userrules import load_rule_files, minimal_words
from torchport.porting.engine import load_map

PORT_EXAMPLE = ROOT / "examples" / "cuda_extension"
SOURCE = "import torch\n\n\ndef f(x, loader):\n    y = x.cuda()\n    torch.cuda.synchronize()\n    return y\n"


def cli(*args):
    """torchport's main in this process: (exit code, stderr)."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main([str(a) for a in args])
    return code, err.getvalue()


def assert_one_line(code, err, path, *words):
    assert code == 2, err
    assert err.count("\n") == 1 and err.startswith("torchport: error: ") and "Traceback" not in err, err
    assert str(path) in err, err
    for w in words:
        assert w in err, (w, err)


@pytest.fixture
def project(tmp_path):
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "m.py").write_text(SOURCE)
    return proj


def write(path, content):
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return path


# ---------------------------------------------------------------- user rules (-r)
ARG = '[[argument]]\ncall = "f"\n'
RULES = [
    # (file name, content, what the message must name)
    ("rename_keyword.toml", '[[rename]]\nold = "a.b"\nnew = "mypkg.if"\n', ["'rename.new'", "keyword"]),
    ("rename_old_keyword.toml", '[[rename]]\nold = "None"\nnew = "b"\n', ["'rename.old'", "keyword"]),
    ("rename_not_name.toml", '[[rename]]\nold = "a.b"\nnew = "os; os.system(1)"\n', ["'rename.new'"]),
    ("keyword_code.toml", ARG + 'keyword = "x=1); import os; f(y"\nnew = "1"\n', ["'argument.keyword'", "identifier"]),
    ("keyword_keyword.toml", ARG + 'keyword = "lambda"\nnew = "1"\n', ["'argument.keyword'", "keyword"]),
    ("keyword_number.toml", ARG + 'keyword = 5\nnew = "1"\n', ["'argument.keyword'", "must be a string"]),
    ("new_comment.toml", ARG + 'keyword = "x"\nnew = "1  # hides the rest of the line"\n',
     ["'argument.new'", "comment"]),
    ("new_statement.toml", ARG + 'keyword = "x"\nnew = "1; import os"\n',
     ["'argument.new'", "not a Python expression"]),
    ("new_two_lines.toml", ARG + 'keyword = "x"\nnew = "(1,\\n 2)"\n', ["'argument.new'", "one line"]),
    ("new_arity.toml", ARG + 'index = 0\nnew = "a, b"\n', ["'argument.new'", "one argument"]),
    ("new_starred.toml", ARG + 'index = 0\nnew = "*args"\n', ["'argument.new'"]),
    ("index_negative.toml", ARG + 'index = -1\nnew = "1"\n', ["'argument.index'", "from 0"]),
    ("index_bool.toml", ARG + 'index = true\nnew = "1"\n', ["'argument.index'", "integer"]),
    ("index_large.toml", ARG + 'index = 123456789012\nnew = "1"\n', ["'argument.index'"]),
    ("index_nan.toml", ARG + 'index = nan\nnew = "1"\n', ["'argument[0].index'", "nan"]),
    ("index_huge.toml", ARG + "index = " + "9" * 5000 + '\nnew = "1"\n', [":3:", "index", "too many digits"]),
    ("tip_placeholder.toml", '[[unsupported]]\nname = "a.b"\ntip = "use {x}"\n', ["'unsupported.tip'", "{x}"]),
    ("tip_brace.toml", '[[unsupported]]\nname = "a.b"\ntip = "use dict(a={)"\n', ["'unsupported.tip'", "brace"]),
    ("note_newline.toml", '[[rename]]\nold = "a.b"\nnew = "c.d"\nnote = "two\\nlines"\n',
     ["'rename.note'", "one line"]),
    ("message_type.toml", '[[keep]]\nname = "a.b"\nmessage = ["x"]\n', ["'message' must be a str"]),
    ("id_type.toml", '[[rename]]\nid = ["x"]\nold = "a.b"\nnew = "c.d"\n', ["'rename.id'", "string"]),
    ("targets_type.toml", '[[rename]]\nold = "a.b"\nnew = "c.d"\ntargets = "npu"\n', ["'rename.targets'", "list"]),
    ("other_target.toml", '[[rename]]\nold = "a.b"\nnew = "if"\ntargets = ["mlu"]\n', ["'rename.new'"]),
    ("deep.toml", "x = " + "[" * 3000 + "]" * 3000 + "\n", ["nested too deeply"]),
    ("latin1.toml", '[[rename]]\nold = "a.b"\nnew = "caf\xe9"\n'.encode("latin-1"), ["not UTF-8"]),
    ("nan.json", '{"argument": [{"call": "f", "index": NaN, "new": "1"}]}', ["'argument[0].index'", "nan"]),
    ("infinity.json", '{"rename": [{"old": "a.b", "new": "c", "note": -Infinity}]}', ["'rename[0].note'", "inf"]),
    ("huge.json", '{"argument": [{"call": "f", "index": ' + "1" * 5000 + ', "new": "1"}]}',
     ["index", "too many digits"]),
    ("deep.json", '{"rename": ' + "[" * 5000 + "]" * 5000 + "}", ["nested too deeply"]),
    ("list_for_string.json", '{"rename": [{"old": ["a"], "new": "b"}]}', ["'old' must be a str"]),
    ("ascend_arg_new.json", '{"rules": {"ArgsModifyRule": [{"func_name": "f", "arg_idx": 0, "arg_new": "x, y"}]}}',
     ["'ArgsModifyRule.arg_new'", "one argument"]),
    ("ascend_arg_idx.json", '{"rules": {"ArgsModifyRule": [{"func_name": "f", "arg_idx": -2, "arg_new": "x"}]}}',
     ["'ArgsModifyRule.arg_idx'"]),
    ("ascend_new_name.json", '{"rules": {"FuncNameModifyRule": [{"old_name": "f", "new_name": "True"}]}}',
     ["'FuncNameModifyRule.new_name'", "keyword"]),
    ("ascend_parent.json",
     '{"rules": {"ModuleNameModifyRule": [{"old_name": "a", "new_name": "b", "parent_module": "x y"}]}}',
     ["'ModuleNameModifyRule.parent_module'"]),
]


@pytest.mark.parametrize("name, content, words", RULES, ids=[r[0] for r in RULES])
def test_bad_user_rule_is_one_line_exit_2(project, tmp_path, name, content, words):
    path = write(tmp_path / name, content)
    code, err = cli("convert", project, "--to", "npu", "-r", path, "-o", tmp_path / "out")
    assert_one_line(code, err, path, *words)
    assert not (tmp_path / "out").exists()


def test_user_rule_with_a_bom_and_good_expressions_convert(project, tmp_path):
    rules = write(tmp_path / "rules.toml", b"\xef\xbb\xbf" + b'''
[[argument]]
call = "f"
keyword = "tag"
new = '"#not-a-comment"'

[[argument]]
call = "g"
index = 0
new = "(1, 2)"

[[argument]]
call = "h"
keyword = "collate_fn"
new = "lambda batch: {k: v for k, v in batch}"

[[unsupported]]
name = "mylib.old"
tip = "on {title} use {namespace}.new ({{braces}} are fine)"
''')
    (project / "m.py").write_text('import mylib\nf(1)\ng(0)\nh()\nmylib.old()\n')
    code, err = cli("convert", project, "--to", "npu", "-r", rules, "-o", tmp_path / "out")
    assert code == 0, err
    out = (tmp_path / "out" / "m.py").read_text()
    assert 'f(1, tag="#not-a-comment")' in out and "g((1, 2))" in out
    assert "h(collate_fn=lambda batch: {k: v for k, v in batch})" in out
    report = (tmp_path / "out_report" / "unsupported_api.csv").read_text()
    assert "on Huawei Ascend NPU use torch.npu.new ({braces} are fine)" in report


def test_the_documented_rule_files_convert_through_the_cli(project, tmp_path):
    doc = (ROOT / "docs" / "user-rules.md").read_text()
    blocks = dict((lang, text) for lang, text in re.findall(r"```(json|toml)\n(.*?)```", doc, re.S))
    toml, js = write(tmp_path / "mine.toml", blocks["toml"]), write(tmp_path / "ascend.json", blocks["json"])
    (project / "m.py").write_text("import apex.amp as aa\nimport torch\nmodel = aa.initialize(model)\n"
                                  "dl = torch.utils.data.DataLoader(ds)\nmake_loader(ds, 4)\nold_func(1)\n")
    code, err = cli("convert", project, "--to", "npu", "-r", toml, "-r", js, "-o", tmp_path / "out")
    assert code == 0, err
    out = (tmp_path / "out" / "m.py").read_text()
    assert "mypkg.amp_init(model)" in out and 'DataLoader(ds, pin_memory_device="npu")' in out
    assert "make_loader(ds, 8)" in out and "new_func(1)" in out


# ---------------------------------------------------------------- target files (--to FILE.toml)
BASE = 'name = "x"\ntitle = "X"\nnamespace = "torch.x"\n'
DEV = BASE + 'device = "x"\n'
TARGETS = [
    ("register", DEV + 'register = "os; os.system(\'id\')"\n', ["'register'", "module name"]),
    ("register_statement", DEV + 'register = "import torch_x"\n', ["'register'", "import torch_npu"]),
    ("namespace", BASE.replace('"torch.x"', '"torch.x; import os"') + 'device = "x"\n', ["'namespace'"]),
    ("namespace_keyword", BASE.replace('"torch.x"', '"torch.class"') + 'device = "x"\n', ["'namespace'", "keyword"]),
    ("device", BASE + 'device = "x\\"); import os; (\\""\n', ["'device'", "plain word"]),
    ("device_expr_comment", BASE + 'device_expr = "{torch}.x  # c"\n', ["'device_expr'", "comment"]),
    ("device_expr_statement", BASE + 'device_expr = "{torch}.x; import os"\n', ["'device_expr'", "expression"]),
    ("device_expr_field", BASE + 'device_expr = "{os}.x"\n', ["'device_expr'", "{torch}"]),
    ("device_expr_quotes", BASE + 'device_expr = "str(\'a\') + \\"b\\""\n', ["'device_expr'", "f-strings"]),
    ("backend_expr_arity", DEV + 'backend_expr = "{torch}.a, {torch}.b"\n', ["'backend_expr'", "one argument"]),
    ("backend", DEV + 'backend = "hccl --evil"\n', ["'backend'"]),
    ("tensor_method", DEV + 'tensor_method = "x()"\n', ["'tensor_method'", "identifier"]),
    ("is_attr_keyword", DEV + 'is_attr = "class"\n', ["'is_attr'", "keyword"]),
    ("device_guard", DEV + 'device_guard = "torch.x.ok()"\n', ["'device_guard'"]),
    ("visible_devices_env", DEV + 'visible_devices_env = "A B"\n', ["'visible_devices_env'"]),
    ("smi", DEV + 'smi = "rm -rf /"\n', ["'smi'", "without spaces"]),
    ("title_newline", BASE.replace('"X"', '"X\\nrm -rf ~"') + 'device = "x"\n', ["'title'", "one line"]),
    ("device_index_type", DEV + 'device_index = "false"\n', ["'device_index'", "true or false"]),
    ("env_value", DEV + '[env]\nCUDA_VISIBLE_DEVICES = "X\\"; rm -rf /; \\""\n', ["'env.CUDA_VISIBLE_DEVICES'"]),
    ("names_new", DEV + '[names]\n"torch.cuda.a" = { new = "torch.x.b()" }\n', ["'names.\"torch.cuda.a\".new'"]),
    ("names_key", DEV + '[names]\n"torch cuda" = { new = "torch.x" }\n', ["'names.\"torch cuda\"'"]),
    ("names_message", DEV + '[names]\n"torch.cuda.a" = { unsupported = "use {x}" }\n', ["unsupported'", "{x}"]),
    ("names_type", DEV + '[names]\n"torch.cuda.a" = { keep = 3 }\n', ["keep'", "must be a string"]),
    ("names_two", DEV + '[names]\n"torch.cuda.a" = { keep = "a", same = "b" }\n', ["exactly one of"]),
    ("needs_device", DEV + '[needs_device]\n"torch.x.f" = "__import__(\'os\')"\n',
     ["'needs_device.\"torch.x.f\"'", "literal"]),
    ("no_arguments", DEV + '[no_arguments]\n"torch.cuda.Event" = ""\n', ["'no_arguments.\"torch.cuda.Event\"'"]),
    ("port_module", DEV + '[port]\nextension_module = "a b"\n', ["'port.extension_module'"]),
    ("port_names", DEV + '[port]\nnames = { CUDAExtension = "X()" }\n', ["'port.names.CUDAExtension'"]),
    ("port_compiler_key", DEV + '[port]\ncompiler_key = "m\\"cc"\n', ["'port.compiler_key'"]),
    ("port_unknown_key", DEV + '[port]\nextention_module = "a"\n', ["'port'", "unknown key"]),
    ("runtime_type", DEV + '[runtime]\nnoop = "torch.cuda.x"\n', ["'runtime.noop'", "list"]),
    ("doctor_newline", DEV + '[doctor]\nsmi_args = ["a\\nb"]\n', ["'doctor.smi_args[0]'"]),
    ("sim_label_number", DEV + "[sim]\nlabel = 99999999999999\n", ["'sim.label'"]),
    ("sim_nan", DEV + "[sim]\nlabel = nan\n", ["'sim.label'", "nan"]),
    ("sim_inf", DEV + "[sim]\nversion = inf\n", ["'sim.version'", "inf"]),
    ("huge", DEV + "[sim]\nlabel = " + "1" * 5000 + "\n", [":6:", "label", "too many digits"]),
    ("deep", DEV + "x = " + "[" * 3000 + "]" * 3000 + "\n", ["nested too deeply"]),
    ("latin1", (DEV + 'torch_install = "caf\xe9"\n').encode("latin-1"), ["not UTF-8"]),
    ("list_for_string", BASE + 'device = ["x"]\n', ["'device'", "must be a string, not a list"]),
]


@pytest.mark.parametrize("name, content, words", TARGETS, ids=[t[0] for t in TARGETS])
def test_bad_target_value_is_one_line_exit_2(project, tmp_path, name, content, words):
    path = write(tmp_path / f"{name}.toml", content)
    code, err = cli("convert", project, "--to", path, "-o", tmp_path / "out")
    assert_one_line(code, err, path, *words)
    assert not (tmp_path / "out").exists()


def test_bad_api_list_is_one_line_exit_2(project, tmp_path):
    write(tmp_path / "api.json", '{"names": ["synchronize", NaN]}')
    path = write(tmp_path / "t.toml", DEV + 'api = "api.json"\n')
    code, err = cli("convert", project, "--to", path, "-o", tmp_path / "out")
    assert_one_line(code, err, tmp_path / "api.json", "'names[1]'", "nan")


@pytest.mark.parametrize("name", available_targets())
def test_bundled_targets_pass_the_checks_and_convert(project, tmp_path, name):
    path = ROOT / "src" / "torchport" / "backends" / f"{name}.toml"
    copy = write(tmp_path / f"copy_{name}.toml", b"\xef\xbb\xbf" + path.read_bytes())  # from a file, with a BOM
    assert load_target(name).name == name
    code, err = cli("convert", project, "--to", copy, "-o", tmp_path / "out")
    assert code == 0, err
    assert (tmp_path / "out" / "m.py").read_text() != SOURCE


# ---------------------------------------------------------------- port-ext maps (-m)
MAPS = [
    ("flat_value", '{"cudaMalloc": "bad name()"}', ["'cudaMalloc'", "C/C++ name"]),
    ("identifier_value", '{"identifiers": {"cudaMalloc": "musaMalloc; system(0)"}}', ["'identifiers.cudaMalloc'"]),
    ("header_value", '{"headers": {"cuda.h": "musa.h>\\n#include <evil.h"}}', ["'headers.\"cuda.h\"'", "include path"]),
    ("suffix_value", '{"suffixes": {".cu": "/../x"}}', ["'suffixes.\".cu\"'"]),
    ("reason_value", '{"unsupported": {"cudaFoo": "two\\nlines"}}', ["'unsupported.cudaFoo'", "one line"]),
    ("nan", '{"cudaMalloc": NaN}', ["'cudaMalloc'", "nan"]),
    ("huge", '{"identifiers": {"cudaMalloc": ' + "9" * 5000 + "}}", [":1:", "cudaMalloc", "too many digits"]),
    ("deep", '{"identifiers": ' + "[" * 5000 + "]" * 5000 + "}", ["nested too deeply"]),
    ("wrong_type", '{"identifiers": ["cudaMalloc"]}', ["'identifiers' must map names to strings"]),
    ("latin1", b'{"cudaMalloc": "caf\xe9"}', ["not UTF-8"]),
]


@pytest.mark.parametrize("name, content, words", MAPS, ids=[m[0] for m in MAPS])
def test_bad_port_map_value_is_one_line_exit_2(tmp_path, name, content, words):
    path = write(tmp_path / f"{name}.json", content)
    code, err = cli("port-ext", PORT_EXAMPLE, "--to", "musa", "-m", path, "-o", tmp_path / "out")
    assert_one_line(code, err, path, *words)
    assert not (tmp_path / "out").exists()


def test_good_port_map_values_load(tmp_path):
    path = write(tmp_path / "good.json", b"\xef\xbb\xbf" + json.dumps({
        "identifiers": {"cudaArray_t": "musaArray *", "at::cuda::getStream": "c10::musa::getStream",
                        "cuFoo": "::muFoo"},
        "headers": {"my/cuda_utils.cuh": "my-lib/musa utils.muh"}, "suffixes": {"_cuda.cpp": "_musa.cpp"},
        "review": {"cudaMemcpy": "check the copy kind: {0}"}}).encode())
    pmap = load_map("musa", [path])
    assert pmap.identifiers["cudaArray_t"] == "musaArray *" and pmap.suffixes["_cuda.cpp"] == "_musa.cpp"


# ---------------------------------------------------------------- the real entry point
@pytest.mark.subprocess
@pytest.mark.parametrize("args, key", [
    (["convert", "{proj}", "--to", "npu", "-r", "{rules}"], "'argument.keyword'"),
    (["convert", "{proj}", "--to", "{target}"], "'register'"),
    (["port-ext", str(PORT_EXAMPLE), "--to", "musa", "-m", "{map}"], "'cudaMalloc'"),
], ids=["rules", "target", "map"])
def test_console_entry_point_prints_no_traceback(project, tmp_path, args, key):
    files = {"proj": project, "rules": write(tmp_path / "r.toml", ARG + 'keyword = "a b"\nnew = "1"\n'),
             "target": write(tmp_path / "t.toml", DEV + 'register = "a;b"\n'),
             "map": write(tmp_path / "m.json", '{"cudaMalloc": "x y"}')}
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    command = [sys.executable, "-m", "torchport", *[a.format(**files) for a in args], "-o", str(tmp_path / "o")]
    p = subprocess.run(command, capture_output=True, text=True, env=env)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and key in p.stderr and "Traceback" not in p.stderr, p.stderr


# ---------------------------------------------------------------- trigger words
def minimal_by_pairs(words):
    """The definition: the words that contain no other word."""
    return sorted(w for w in set(words) if not any(v != w and v in w for v in words))


@pytest.mark.parametrize("words", [
    [], ["cuda"], ["cuda", "cudamalloc", "xcuda", "nccl", "ncclallreduce"], ["ab", "abc", "b", "bc", "cab"],
    ["".join(p) for n in range(1, 4) for p in combinations("abcd", n)],
])
def test_minimal_words_keeps_exactly_the_words_holding_no_other(words):
    assert minimal_words(words) == minimal_by_pairs(words)


def test_twenty_thousand_rules_give_the_right_trigger_words(tmp_path):
    """fn_0 is inside fn_00000 ... fn_09999; fn_10000 ... fn_19999 hold no other word (the minimiser used to
    compare every pair: 20,000 rules took minutes)."""
    text = "".join(f'[[rename]]\nold = "fn_{i:05d}"\nnew = "g_{i}"\n\n' for i in range(20000))
    text += '[[rename]]\nold = "fn_0"\nnew = "g"\n\n[[unsupported]]\nname = "pkg.sub.ab"\ntip = "no"\n'
    rules = load_rule_files([write(tmp_path / "many.toml", text)], "npu")
    assert len(rules.codes) == 20002
    assert rules.trigger_words() == {"fn_0", "pkg", "sub"} | {f"fn_{i}" for i in range(10000, 20000)}
