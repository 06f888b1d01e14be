"""The C/C++ lexer and the porting engine on small, nasty inputs."""
from torchport.porting.engine import IncludeResolver, PortMap, port_text
from torchport.porting.lexer import include_path, scan, tokens


def kinds(text):
    return [(t.kind, t.text) for t in tokens(text)]


def test_comments_strings_and_chars():
    text = ('int a = 1; // cudaMalloc here\n/* cudaFree\n   more */ char c = \'"\'; '
            'const char* s = "cudaMalloc \\" // not a comment"; x = \'\\\'\';\n')
    k = kinds(text)
    assert ("comment", "// cudaMalloc here") in k
    assert ("comment", "/* cudaFree\n   more */") in k
    assert ("char", "'\"'") in k and ("char", "'\\''") in k
    assert ("string", '"cudaMalloc \\" // not a comment"') in k
    assert not any(kind == "ident" and "cuda" in t for kind, t in k)


def test_raw_strings_line_continuations_and_digit_separators():
    text = ('auto r = R"x(cudaMalloc )" still raw)x"; int n = 1\'000\'000; cudaFree(p);\n'
            '// comment continues \\\ncudaMemcpy on the next line\nfoo();\n')
    k = kinds(text)
    assert ("string", 'R"x(cudaMalloc )" still raw)x"') in k
    assert ("number", "1'000'000") in k
    assert ("ident", "cudaFree") in k
    assert ("comment", "// comment continues \\\ncudaMemcpy on the next line") in k
    assert ("ident", "foo") in k


def test_qualified_names_and_includes():
    text = '#include <cuda_runtime.h>\n  #  include "helpers/kernel.cuh"\nauto s = at::cuda::getCurrentCUDAStream();\n'
    k = kinds(text)
    assert ("ident", "at::cuda::getCurrentCUDAStream") in k
    includes = [t for t in tokens(text) if t.kind == "include"]
    assert [include_path(t.text)[:2] for t in includes] == [("cuda_runtime.h", "<"), ("helpers/kernel.cuh", '"')]
    regions, incs, _ = scan(text)
    assert len(incs) == 2
    assert all("include" not in text[s:e] for s, e in regions)


def test_scan_regions_exclude_comments_and_literals():
    text = 'cudaMalloc(x); // cudaFree\nputs("cudaMemcpy"); cudaDeviceSynchronize();'
    regions, _, _ = scan(text)
    code = "".join(text[s:e] for s, e in regions)
    assert "cudaMalloc" in code and "cudaDeviceSynchronize" in code
    assert "cudaFree" not in code and "cudaMemcpy" not in code


def _map(**ids):
    return PortMap("musa", ids, {"cuda_runtime.h": "musa_runtime.h"}, {"cudaLaunchCooperativeKernel": "none"},
                   {".cu": ".mu", ".cuh": ".muh"}, "test").compile()


def test_whole_identifiers_longest_match_and_file_start():
    pmap = _map(cudaMalloc="musaMalloc", cudaMallocHost="musaMallocHost", cuda="musa",
                **{"at::cuda::getCurrentCUDAStream": "c10::musa::getCurrentMUSAStream", "Acc": "Acm"})
    text = ('cudaMalloc(&p, n); cudaMallocHost(&q, n); cudaMallocManaged(&r, n);\n'
            'Accumulate(x); Acc(y); auto s = at::cuda::getCurrentCUDAStream(); // cudaMalloc\n'
            'cudaLaunchCooperativeKernel(k);\n')
    out = port_text("a.cu", text, pmap, lambda rel, path: None)
    assert out.new_text.startswith("musaMalloc(&p, n); musaMallocHost(&q, n); cudaMallocManaged(&r, n);")
    assert "Accumulate(x); Acm(y); auto s = c10::musa::getCurrentMUSAStream(); // cudaMalloc" in out.new_text
    assert out.left["cudaMallocManaged"] == 1
    assert [f.old for f in out.findings if f.action == "unsupported"] == ["cudaLaunchCooperativeKernel"]
    assert out.converted["cudaMalloc"] == 1 and out.converted["at::cuda::getCurrentCUDAStream"] == 1


def test_includes_follow_renamed_project_headers():
    pmap = _map()
    resolver = IncludeResolver(["src/a.cu", "src/helpers/kernel.cuh", "include/common.h"], pmap.suffixes)
    text = '#include <cuda_runtime.h>\n#include "helpers/kernel.cuh"\n#include "common.h"\n#include "missing.cuh"\n'
    out = port_text("src/a.cu", text, pmap, resolver)
    assert out.new_text == ('#include <musa_runtime.h>\n#include "helpers/kernel.muh"\n#include "common.h"\n'
                            '#include "missing.cuh"\n')


def test_needs_review_detectors():
    text = ('#if __CUDA_ARCH__ >= 800\nasm volatile("mov.u32 %0, %%laneid;" : "=r"(x));\n#endif\n'
            'v = __shfl_down_sync(0xffffffff, v, 1);\nconst int warpSize = 32;\nint lane = tid % 32;\n'
            'cudaLaunchCooperativeKernel(f, g, b, a);\nwmma::fragment<a, 16, 16, 16, half> frag;\n'
            'int l2 = tid & 31; int rows = n % 31; /* % 32 in a comment */\n')
    out = port_text("k.cu", text, _map(), lambda rel, path: None)
    review = {(f.line, f.message.split(":")[0]) for f in out.findings if f.rule == "TP955"}
    assert {line for line, _ in review} == {1, 2, 4, 5, 6, 7, 8, 9}
    assert [f.old for f in out.findings if f.rule == "TP955" and f.line == 9] == ["& 31"]
    assert out.review == len([f for f in out.findings if f.rule == "TP955"])


def test_scan_agrees_with_the_tokenizer():
    """`scan` (the porter's fast pass) and `tokens` (the full lexer) split code from the rest alike."""
    from golden_support import PORT_EXAMPLE

    texts = [p.read_text() for p in sorted(PORT_EXAMPLE.rglob("*")) if p.suffix in (".cu", ".cuh", ".cpp")]
    texts.append('cudaFree(p);\n#define STR(x) #x\n#define INC "a.h" // #include "b.h"\n  # include <c.h>\n'
                 'x = STR(cudaMalloc) + u8"cudaMemcpy" + L\'c\' + 0x1\'0;\n')
    for text in texts:
        regions, includes, comments = scan(text)
        code = set()
        for s, e in regions:
            code.update(range(s, e))
        for t in tokens(text):
            inside = sum(1 for i in range(t.start, t.end) if i in code)
            if t.kind in ("ident", "number", "punct"):
                assert inside == t.end - t.start, t
            else:
                assert inside == 0 or (t.kind == "include" and not t.text[:inside].strip()), t
        assert len(includes) == sum(1 for t in tokens(text) if t.kind == "include")
        assert len(comments) == sum(1 for t in tokens(text) if t.kind == "comment")


def test_macros_are_code_and_their_continuations_too():
    pmap = _map(__CUDACC__="__MUSACC__", cudaMalloc="musaMalloc")
    text = ('#ifdef __CUDACC__\n#define ALLOC(p, n) \\\n  cudaMalloc(&(p), (n))\n#endif\n'
            '#define NAME "cudaMalloc"\n#define PASTE(x) cuda##x\n')
    out = port_text("m.h", text, pmap, lambda rel, path: None)
    assert out.new_text == ('#ifdef __MUSACC__\n#define ALLOC(p, n) \\\n  musaMalloc(&(p), (n))\n#endif\n'
                            '#define NAME "cudaMalloc"\n#define PASTE(x) cuda##x\n')
