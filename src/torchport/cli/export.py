"""`torchport export onnx`: a trained model exported to ONNX on the CPU, the way Ascend's guide does it, and
checked (onnx.checker, onnxruntime against the model) before the file is written."""
from __future__ import annotations

from ..core.names import printable
from .common import add_trust_options, output_path


def run_onnx(args) -> int:
    from ..export import DEFAULT_OPSET, ExportRequest, export_onnx, parse_names, parse_shape

    shapes = [parse_shape(s) for s in args.input_shape]
    dtypes = [d for text in args.dtype for d in text.split(",")]
    result = export_onnx(ExportRequest.of(args.model, args.output, shapes, checkpoint=args.checkpoint, dtypes=dtypes,
                                          opset=DEFAULT_OPSET if args.opset is None else args.opset,
                                          input_names=parse_names(args.input_names, "--input-names"),
                                          output_names=parse_names(args.output_names, "--output-names"),
                                          dynamic_axes=args.dynamic_axes, allow=args.allow, trust=args.trust,
                                          atol=args.atol, force=args.force))
    if result.checkpoint:
        cut = "".join(f", '{p}' cut from its keys" for p in result.stripped)
        print(f"loaded {printable(result.checkpoint)} (weights_only=True){cut}")
    inputs = ", ".join(f"{printable(n)} {'x'.join(map(str, s))} {d}" for n, s, d in result.inputs)
    print(f"exported {printable(args.model)} in eval mode on the CPU, opset {result.opset}: inputs {inputs}; "
          f"outputs {', '.join(printable(n) for n in result.outputs)}")
    for name, axes in result.dynamic.items():
        print(f"  dynamic: {printable(name)} " + ", ".join(f"axis {a} ({printable(label)})" for a, label in axes.items()))
    checked = not any(p.startswith("onnx.checker") for p in result.problems)
    print(f"onnx.checker (full check): {'passed' if checked else 'FAILED'}")
    if result.max_diff is None:
        why = ("onnxruntime is not installed: pip install onnxruntime" if not result.onnxruntime
               else "not run: the checker failed" if not checked else "onnxruntime could not run the file")
        print(f"onnxruntime: unverified ({why})")
    else:
        print(f"onnxruntime vs the model, same random inputs: max abs diff {result.max_diff:.3g} "
              f"(tolerance {result.atol:g})" + (f"; dynamic axes grown by 2: {result.dynamic_diff:.3g}"
                                               if result.dynamic_diff is not None else ""))
    if result.problems:
        print("problems (nothing written):")
        for problem in result.problems:
            print(f"  - {printable(problem)}")
        return 1
    print(f"wrote {printable(result.output)}")
    return 0


def add(sub) -> None:
    ex = sub.add_parser("export", help="export a trained model for deployment (ONNX), checked before it is written",
                        description="Export a model the way Ascend's guide does (CPU, eval(), torch.onnx.export).")
    esub = ex.add_subparsers(dest="export_command", metavar="EXPORT_COMMAND", required=True)
    onnx = esub.add_parser(
        "onnx", help="build the model on the CPU, load its checkpoint, eval(), torch.onnx.export, then check the "
                     "file with onnx.checker and onnxruntime",
        description="Export to ONNX on the CPU and verify: onnx.checker, then onnxruntime against the model on "
                    "the same random inputs (exit 1 over the tolerance; 'unverified' without onnxruntime). The "
                    "file is written only when the checks pass.")
    onnx.add_argument("--model", required=True, metavar="MODULE:FACTORY",
                      help="the factory that builds the model: pkg.mod:build (imported from the current folder) or "
                           "path/to/file.py:build")
    onnx.add_argument("--checkpoint", metavar="CKPT",
                      help="weights to load (torch.load weights_only=True; a model state dict, or one under "
                           "'model'/'state_dict'/...; a 'module.' or '_orig_mod.' prefix is cut)")
    add_trust_options(onnx)
    onnx.add_argument("--input-shape", action="append", default=[], required=True, metavar="D,D,...",
                      help="the shape of one input (1,3,224,224); repeat it for each input, in order")
    onnx.add_argument("--dtype", action="append", default=[], metavar="DTYPE",
                      help="the inputs' dtype: one for all or one per input, repeatable or comma-separated "
                           "(float32 by default; float16, float64, int64, int32, bool)")
    onnx.add_argument("--opset", type=int, metavar="N", help="the ONNX opset to write (default 11, what ATC takes)")
    onnx.add_argument("--input-names", metavar="A,B", help="names of the inputs (default: input, or input0,input1...)")
    onnx.add_argument("--output-names", metavar="Y", help="names of the outputs (default: output)")
    onnx.add_argument("--dynamic-axes", action="append", default=[], metavar="NAME:AXIS[=LABEL]",
                      help="an axis of an input or output whose size may change (input:0=batch_size); repeatable, "
                           "several axes as NAME:0,2")
    onnx.add_argument("--atol", type=float, default=1e-5, metavar="X",
                      help="the largest absolute difference allowed between onnxruntime and the model (1e-5)")
    onnx.add_argument("-o", "--output", type=output_path, required=True, help="the .onnx file to write")
    onnx.add_argument("--force", action="store_true", help="replace OUTPUT if it exists")
    onnx.set_defaults(func=run_onnx)
