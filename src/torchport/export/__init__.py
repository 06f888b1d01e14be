"""ONNX export the way Ascend's guide does it ("模型保存与转换 / 导出ONNX模型"): the model built on the CPU,
its checkpoint loaded (`weights_only=True`, a `module.`/`_orig_mod.` prefix cut), `eval()`, then
`torch.onnx.export` with the user's opset, input/output names and dynamic axes; and then verified.

The model comes from the user's factory through `ckpt.build_model` and the checkpoint through `ckpt.load` /
`ckpt.load_model_state`: the one loader `torchport ckpt fix --check-model` uses.  Export uses torch's
TorchScript-based exporter (`dynamo=False`): it writes the opset asked for (11 by default, the opset the guide's
ATC tool takes), while the torch.export-based one writes opset 18 or newer and needs onnxscript.

Verification, before anything is written: `onnx.checker.check_model` on the exported bytes (full check), then,
when onnxruntime is importable, the same random inputs through the model and an onnxruntime CPU session (the
largest absolute difference against `atol`), and, for dynamic axes, a second run with those axes grown by 2.
Without onnxruntime the numeric check is "unverified", never "ok".  The file is written (atomically) only when
every check that ran passed.
"""
from __future__ import annotations

import io
import math
import os
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from ..core.errors import UsageError
from ..core.files import same_file

DEFAULT_OPSET = 11      # the guide's example: "ATC工具目前仅支持opset_version=11"
OPSETS = (7, 20)        # torch 2.13 torch/onnx/_constants.py: ONNX_MIN_OPSET, ONNX_TORCHSCRIPT_EXPORTER_MAX_OPSET
DTYPES = {"float32": "float32", "float": "float32", "fp32": "float32", "float16": "float16", "half": "float16",
          "fp16": "float16", "float64": "float64", "double": "float64",
          "int64": "int64", "long": "int64", "int32": "int32", "int": "int32", "bool": "bool"}
INT_HIGH = 10           # integer inputs (token ids, indexes) are drawn from [0, INT_HIGH)
SHAPE = re.compile(r"\d+(?:,\d+)*\Z")
AXES = re.compile(r"([^:=,\s]+):(\d+(?:=[\w.-]+)?(?:,\d+(?:=[\w.-]+)?)*)\Z")


@dataclass
class Exported:
    """What `export_onnx` did: the file, the opset it holds, names, and the checks with their results."""

    output: str
    opset: int
    inputs: list                                     # [(name, shape, dtype)]
    outputs: list                                    # output names, from the written graph
    dynamic: dict = field(default_factory=dict)      # name -> {axis: label}
    stripped: list = field(default_factory=list)     # prefixes cut from the checkpoint's keys
    checkpoint: Optional[str] = None
    max_diff: Optional[float] = None                 # None: onnxruntime missing (unverified)
    dynamic_diff: Optional[float] = None             # the run with dynamic axes grown, when there are some
    atol: float = 1e-5
    problems: list = field(default_factory=list)     # what failed; nothing is written then
    onnxruntime: bool = False                        # importable here
    written: bool = False


MAX_INPUT_ELEMENTS = 1 << 28   # a sample input of 268M elements (1 GiB of float32) is more than any check needs


def parse_shape(text: str) -> tuple:
    """'1,3,224,224' -> (1, 3, 224, 224); anything else is a usage error."""
    compact = text.replace(" ", "")
    if not SHAPE.match(compact) or any(int(d) == 0 for d in compact.split(",")):
        raise UsageError(f"--input-shape needs positive integers separated by commas (1,3,224,224), got {text!r}")
    shape = tuple(int(d) for d in compact.split(","))
    if math.prod(shape) > MAX_INPUT_ELEMENTS:
        raise UsageError(f"--input-shape {text}: {math.prod(shape):,} elements, more than the {MAX_INPUT_ELEMENTS:,} "
                         "an export's sample input may have (the graph takes any size its dynamic axes allow)")
    return shape


def parse_names(text: Optional[str], option: str) -> list:
    if text is None:
        return []
    names = [n.strip() for n in text.split(",")]
    if not all(names) or len(set(names)) != len(names):
        raise UsageError(f"{option} needs distinct names separated by commas (input,mask), got {text!r}")
    return names


def parse_dynamic_axes(specs, names: list) -> dict:
    """['input:0', 'output:0=batch', 'mask:0,1'] -> {'input': {0: 'input_dim0'}, 'output': {0: 'batch'}, ...}."""
    axes: dict = {}
    for spec in specs:
        m = AXES.match(spec.replace(" ", ""))
        if not m:
            raise UsageError(f"--dynamic-axes needs NAME:AXIS[=LABEL][,AXIS...] (input:0=batch), got {spec!r}")
        name = m.group(1)
        if name not in names:
            raise UsageError(f"--dynamic-axes {spec}: {name!r} is not an input or output name "
                             f"({', '.join(names)}; set them with --input-names/--output-names)")
        for part in m.group(2).split(","):
            axis, _, label = part.partition("=")
            axes.setdefault(name, {})[int(axis)] = label or f"{name}_dim{axis}"
    return axes


def _modules():
    try:
        import torch
    except ImportError:
        raise UsageError("torchport export needs PyTorch in this environment (pip install torch)") from None
    try:
        import onnx
    except ImportError:
        raise UsageError("torchport export onnx needs the onnx package to check what it writes "
                         "(pip install onnx; add onnxruntime for the numeric check)") from None
    try:
        import onnxruntime
    except ImportError:
        onnxruntime = None
    return torch, onnx, onnxruntime


@dataclass(frozen=True)
class ExportRequest:
    """One ONNX export: `model` ('pkg.mod:factory' or 'file.py:factory') built on the CPU, `checkpoint` loaded
    into it (`allow`/`trust`: the pickled globals its loader may build, see ckpt), exported to `output` for
    inputs of `shapes` (one shape tuple per input, of `dtypes`: one for each, or one for all), then checked
    against the model within `atol` on random inputs drawn with `seed`."""

    model: str
    output: Path
    shapes: tuple
    checkpoint: Optional[Path] = None
    dtypes: tuple = ()
    opset: int = DEFAULT_OPSET
    input_names: tuple = ()
    output_names: tuple = ()
    dynamic_axes: tuple = ()
    allow: tuple = ()
    trust: tuple = ()
    atol: float = 1e-5
    force: bool = False
    seed: int = 0

    @classmethod
    def of(cls, model: str, output, shapes, **options) -> ExportRequest:
        """A request from the keywords the fields above name (lists or tuples)."""
        for key in ("dtypes", "input_names", "output_names", "dynamic_axes", "allow", "trust"):
            if key in options:
                options[key] = tuple(options[key] or ())
        if options.get("checkpoint") is not None:
            options["checkpoint"] = Path(options["checkpoint"])
        return cls(model, Path(output), tuple(tuple(s) for s in shapes), **options)


def _checked_output(request: ExportRequest) -> Path:
    """The output path, when it may be written and the numbers asked for are sound; else a UsageError."""
    out, checkpoint, model, shapes = Path(request.output), request.checkpoint, request.model, request.shapes
    if out.exists() and not request.force:
        raise UsageError(f"{out} exists (use --force to replace it)")
    if checkpoint is not None and same_file(out, checkpoint):
        raise UsageError("-o must name a new file: torchport does not overwrite the checkpoint it reads")
    source = model.rsplit(":", 1)[0]
    if source.endswith(".py") and same_file(out, source):
        raise UsageError("-o must name a new file: torchport does not overwrite the model's source")
    if not shapes:
        raise UsageError("--input-shape is needed, once per input of the model (1,3,224,224)")
    total = sum(math.prod(shape) for shape in shapes)
    if total > MAX_INPUT_ELEMENTS:   # each one may be under the bound and all of them over it
        raise UsageError(f"--input-shape: {total:,} elements in all, more than the {MAX_INPUT_ELEMENTS:,} a check "
                         "needs (give smaller sample inputs)")
    if not (math.isfinite(request.atol) and request.atol >= 0):
        raise UsageError(f"--atol must be a finite number, 0 or more (got {request.atol})")
    if not OPSETS[0] <= request.opset <= OPSETS[1]:
        raise UsageError(f"--opset {request.opset}: torch's TorchScript exporter writes opsets {OPSETS[0]} to "
                         f"{OPSETS[1]}")
    return out


def _inputs_and_outputs(request: ExportRequest) -> tuple:
    """(the inputs' dtypes, their names, the outputs' names): one dtype given stands for every input, names
    default to input/input0.../output; a UsageError when they do not fit the shapes."""
    shapes = request.shapes
    dtypes: list = list(request.dtypes) or ["float32"]
    if len(dtypes) == 1:
        dtypes *= len(shapes)
    if len(dtypes) != len(shapes):
        raise UsageError(f"--dtype: give one for every input or one for all ({len(shapes)} input shapes, "
                         f"{len(dtypes)} dtypes)")
    unknown = [d for d in dtypes if d not in DTYPES]
    if unknown:
        raise UsageError(f"--dtype {unknown[0]}: not one of {', '.join(sorted(set(DTYPES.values())))}")
    dtypes = [DTYPES[d] for d in dtypes]
    input_names = list(request.input_names) or (["input"] if len(shapes) == 1 else
                                                [f"input{i}" for i in range(len(shapes))])
    if len(input_names) != len(shapes):
        raise UsageError(f"--input-names gives {len(input_names)} name(s) for {len(shapes)} input shape(s)")
    output_names = list(request.output_names) or ["output"]
    if set(input_names) & set(output_names):
        raise UsageError(f"an input and an output share a name ({sorted(set(input_names) & set(output_names))[0]})")
    return dtypes, input_names, output_names


def export_onnx(request: ExportRequest) -> Exported:
    """Build the request's model on the CPU, load its checkpoint, eval(), export it to ONNX and verify the
    result; nothing is written unless every check passed."""
    from .. import ckpt

    model, checkpoint, opset, allow, trust = request.model, request.checkpoint, request.opset, request.allow, request.trust
    atol, seed = request.atol, request.seed
    out = _checked_output(request)
    shapes = list(request.shapes)
    dtypes, input_names, output_names = _inputs_and_outputs(request)
    axes = parse_dynamic_axes(list(request.dynamic_axes), input_names + output_names)
    for name, marked in axes.items():
        if name in input_names:
            rank = len(shapes[input_names.index(name)])
            bad = [a for a in marked if a >= rank]
            if bad:
                raise UsageError(f"--dynamic-axes {name}:{bad[0]}: {name} has {rank} dimension(s)")
    torch, onnx, ort = _modules()

    net = ckpt.build_model(model, "--model")
    ckpt.refuse_overwriting_source(out, model)   # `-o pkg/m.py` with `--model pkg.m:build`: known once imported
    result = Exported(str(out), opset, [], [], axes, checkpoint=str(checkpoint) if checkpoint else None, atol=atol)
    if checkpoint is not None:
        obj, _locations = ckpt.load(checkpoint, allow, trust)
        result.stripped = ckpt.load_model_state(torch, net, obj, model, "--checkpoint",
                                                strip=tuple(ckpt.PREFIXES))
    net = net.to("cpu").eval()

    generator = torch.Generator().manual_seed(seed)
    inputs = tuple(_random(torch, shape, dtype, generator) for shape, dtype in zip(shapes, dtypes))
    result.inputs = [(n, tuple(s), d) for n, s, d in zip(input_names, shapes, dtypes)]
    buffer = io.BytesIO()
    try:
        with torch.no_grad(), warnings.catch_warnings():
            warnings.filterwarnings("ignore", category=DeprecationWarning)  # the TorchScript exporter's, on purpose
            torch.onnx.export(net, tuple(t.clone() for t in inputs), buffer, input_names=input_names,
                              output_names=output_names,
                              opset_version=opset, dynamic_axes=axes or None, dynamo=False)
    except Exception as e:  # noqa: BLE001 - the exporter's refusal (an op it cannot write at this opset, ...)
        raise UsageError(f"torch.onnx.export failed: {type(e).__name__}: {_first_line(e)}") from None
    data = buffer.getvalue()
    proto = onnx.load_from_string(data)
    result.opset = next((o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")), opset)
    result.outputs = [o.name for o in proto.graph.output]
    try:
        onnx.checker.check_model(proto, full_check=True)
    except Exception as e:  # noqa: BLE001 - onnx.checker.ValidationError and shape-inference errors
        result.problems.append(f"onnx.checker: {_first_line(e)}")
    result.onnxruntime = ort is not None
    if ort is not None and not result.problems:
        try:
            session = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
            result.max_diff = _compare(torch, net, session, input_names, inputs)
        except Exception as e:  # noqa: BLE001 - onnxruntime cannot load or run the graph
            result.problems.append(f"onnxruntime could not run the file ({_first_line(e)})")
            result.max_diff = None
    if result.max_diff is not None:
        if not result.max_diff <= atol:   # NaN compares false: a failure
            result.problems.append(f"onnxruntime's outputs differ from the model's {_by(result.max_diff, atol)}")
        grown = _grown(torch, inputs, input_names, axes, dtypes, generator)
        if grown is not None:
            try:
                result.dynamic_diff = _compare(torch, net, session, input_names, grown)
            except Exception as e:  # noqa: BLE001 - onnxruntime refuses a size the graph fixed
                result.problems.append(f"dynamic axes: onnxruntime refused inputs with them grown by 2 "
                                       f"({_first_line(e)})")
            else:
                if not result.dynamic_diff <= atol:
                    result.problems.append(f"dynamic axes: with them grown by 2, onnxruntime's outputs differ "
                                           f"{_by(result.dynamic_diff, atol)}")
    if not result.problems:
        from ..core import writes

        out.parent.mkdir(parents=True, exist_ok=True)
        mode = 0o666 & ~writes.UMASK
        if checkpoint:   # the weights are the checkpoint's: never more readable than it is
            mode &= os.stat(checkpoint).st_mode & 0o777
        writes.write_file(out, data, mode=mode)
        result.written = True
    return result


def _first_line(e: Exception) -> str:
    return (str(e).strip().splitlines() or [type(e).__name__])[0][:300]


def _by(diff: float, atol: float) -> str:
    if diff == float("inf"):
        return "in shape"
    if diff != diff:
        return "by a NaN or an infinity on one side"
    return f"by up to {diff:.3g} (more than {atol:g})"


def _random(torch, shape, dtype: str, generator):
    kind = getattr(torch, dtype)
    if dtype == "bool":
        return torch.randint(0, 2, shape, generator=generator).bool()
    if dtype.startswith("int"):
        return torch.randint(0, INT_HIGH, shape, generator=generator, dtype=kind)
    return torch.randn(shape, generator=generator).to(kind)


def _grown(torch, inputs, names, axes, dtypes, generator):
    """The inputs again with every dynamic axis 2 larger, or None when no input has one."""
    if not any(name in axes for name in names):
        return None
    grown = []
    for tensor, name, dtype in zip(inputs, names, dtypes):
        shape = [d + 2 if i in axes.get(name, {}) else d for i, d in enumerate(tensor.shape)]
        grown.append(_random(torch, shape, dtype, generator))
    return tuple(grown)


def _compare(torch, net, session, names, inputs) -> float:
    """The largest absolute difference between the model's outputs and onnxruntime's for the same inputs."""
    feeds = {n: t.numpy().copy() for n, t in zip(names, inputs)}   # before a model that writes its inputs runs
    with torch.no_grad():
        expected = _flatten(torch, net(*(t.clone() for t in inputs)))
    got = session.run(None, feeds)
    if len(got) != len(expected):
        raise UsageError(f"the ONNX graph has {len(got)} output(s), the model returned {len(expected)}")
    diff = 0.0
    for want, have in zip(expected, got):
        have = torch.from_numpy(have)
        if tuple(have.shape) != tuple(want.shape):
            return float("inf")
        if want.numel():
            d = float((have.double() - want.double()).abs().max())
            if not math.isfinite(d):   # a NaN or an infinity on either side: no agreement to measure
                return float("nan")
            diff = max(diff, d)
    return diff


def _flatten(torch, value) -> list:
    """The tensors of a model's output, in the order the exporter lists them (tuples, lists, dict values)."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _flatten(torch, v)]
    return []
