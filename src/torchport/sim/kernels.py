"""Device kernels for ops the vendors implement and PyTorch's CPU does not (CUDA-only ops).

PyTorch sends a PrivateUse1 device down its GPU paths: an LSTM/GRU cell calls the fused cell op,
SyncBatchNorm calls the batch_norm_stats family.  The vendors implement these ops; the CPU has no
kernel for them.  Each function here computes the op with ordinary tensor ops on the simulated
device (which run as host kernels), following the op's definition in PyTorch.  A kernel is
registered only when the target's op list has the op: a vendor that lacks it still fails.
"""
from __future__ import annotations

import torch


def _bias(gates, bias):
    return gates if bias is None else gates + bias


def fused_lstm_cell(input_gates, hidden_gates, cx, input_bias=None, hidden_bias=None):
    gates = _bias(input_gates, input_bias) + (hidden_gates if hidden_bias is None else hidden_gates + hidden_bias)
    i, f, g, o = gates.chunk(4, 1)
    i, f, g, o = i.sigmoid(), f.sigmoid(), g.tanh(), o.sigmoid()
    cy = f * cx + i * g
    hy = o * cy.tanh()
    return hy, cy, torch.cat([i, f, g, o], 1)


def fused_lstm_cell_backward_impl(grad_hy, grad_cy, cx, cy, workspace, has_bias):
    i, f, g, o = workspace.chunk(4, 1)
    tanh_cy = cy.tanh()
    gcy = torch.zeros_like(cy) if grad_cy is None else grad_cy.clone()
    if grad_hy is not None:
        gcy = gcy + grad_hy * o * (1 - tanh_cy * tanh_cy)
        go = grad_hy * tanh_cy * o * (1 - o)
    else:
        go = torch.zeros_like(o)
    gi = gcy * g * i * (1 - i)
    gf = gcy * cx * f * (1 - f)
    gg = gcy * i * (1 - g * g)
    grad_gates = torch.cat([gi, gf, gg, go], 1)
    grad_bias = grad_gates.sum(0) if has_bias else grad_gates.new_empty(0)
    return grad_gates, gcy * f, grad_bias


def fused_gru_cell(input_gates, hidden_gates, hx, input_bias=None, hidden_bias=None):
    ir, ii, in_ = _bias(input_gates, input_bias).chunk(3, 1)
    hr, hi, hn = _bias(hidden_gates, hidden_bias).chunk(3, 1)
    r = (ir + hr).sigmoid()
    z = (ii + hi).sigmoid()
    n = (in_ + r * hn).tanh()
    hy = n + z * (hx - n)
    return hy, torch.cat([r, z, n, hx, hn], 1)


def fused_gru_cell_backward(grad_hy, workspace, has_bias):
    r, z, n, hx, hn = workspace.chunk(5, 1)
    gz = grad_hy * (hx - n) * z * (1 - z)
    gn = grad_hy * (1 - z) * (1 - n * n)
    gr = gn * hn * r * (1 - r)
    grad_input = torch.cat([gr, gz, gn], 1)
    grad_hidden = torch.cat([gr, gz, gn * r], 1)
    empty = grad_input.new_empty(0)
    return (grad_input, grad_hidden, grad_hy * z,
            grad_input.sum(0) if has_bias else empty, grad_hidden.sum(0) if has_bias else empty)


# SyncBatchNorm's statistics ops (per channel, dimension 1)
def _dims(x):
    return [d for d in range(x.dim()) if d != 1]


def _channel(v, x):
    return v.view([1, -1] + [1] * (x.dim() - 2))


def batch_norm_stats(input, eps):
    x = input.float()
    mean = x.mean(_dims(x))
    var = x.var(_dims(x), unbiased=False)
    return mean, (var + eps).rsqrt()


def batch_norm_elemt(input, weight, bias, mean, invstd, eps):
    out = (input - _channel(mean, input)) * _channel(invstd, input)
    if weight is not None:
        out = out * _channel(weight, input)
    if bias is not None:
        out = out + _channel(bias, input)
    return out.to(input.dtype)


def batch_norm_gather_stats_with_counts(input, mean, invstd, running_mean, running_var, momentum, eps, counts):
    counts = counts.to(mean.dtype).view(-1, 1)
    total = counts.sum()
    var = invstd.pow(-2) - eps
    gmean = (counts * mean).sum(0) / total
    gvar = (counts * (var + mean * mean)).sum(0) / total - gmean * gmean
    with torch.no_grad():
        if running_mean is not None:
            running_mean.mul_(1 - momentum).add_(gmean.to(running_mean.dtype) * momentum)
        if running_var is not None:
            unbiased = gvar * total / (total - 1).clamp(min=1)
            running_var.mul_(1 - momentum).add_(unbiased.to(running_var.dtype) * momentum)
    return gmean, (gvar + eps).rsqrt()


def batch_norm_backward_reduce(grad_out, input, mean, invstd, weight, input_g, weight_g, bias_g):
    dims = _dims(input)
    sum_dy = grad_out.float().sum(dims)
    sum_dy_xmu = (grad_out.float() * (input.float() - _channel(mean, input))).sum(dims)
    empty = sum_dy.new_empty(0)
    return (sum_dy if input_g else empty, sum_dy_xmu if input_g else empty,
            (sum_dy_xmu * invstd) if weight_g else empty, sum_dy if bias_g else empty)


def batch_norm_backward_elemt(grad_out, input, mean, invstd, weight, sum_dy, sum_dy_xmu, count):
    n = count.to(sum_dy.dtype).sum()
    mean_dy = _channel(sum_dy / n, input)
    mean_dy_xmu = _channel(sum_dy_xmu / n, input)
    inv = _channel(invstd, input)
    scale = inv if weight is None else inv * _channel(weight, input)
    grad = (grad_out - mean_dy - (input - _channel(mean, input)) * inv * inv * mean_dy_xmu) * scale
    return grad.to(input.dtype)


KERNELS = {
    "_thnn_fused_lstm_cell": fused_lstm_cell,
    "_thnn_fused_lstm_cell_backward_impl": fused_lstm_cell_backward_impl,
    "_thnn_fused_gru_cell": fused_gru_cell,
    "_thnn_fused_gru_cell_backward": fused_gru_cell_backward,
    "batch_norm_stats": batch_norm_stats,
    "batch_norm_elemt": batch_norm_elemt,
    "batch_norm_gather_stats_with_counts": batch_norm_gather_stats_with_counts,
    "batch_norm_backward_reduce": batch_norm_backward_reduce,
    "batch_norm_backward_elemt": batch_norm_backward_elemt,
}

_LIBRARY = None


def has_compatible_shallow_copy_type(self, from_):
    """Module.to() keeps its Parameter objects when the new tensor can be swapped into the old one:
    torch counts only dense backends as compatible, so without this a move to the device made new
    Parameters (an optimizer built before .to() never updated the model; tied weights came apart).
    torch_npu registers the same answer for CPU and its device (HasCompatibleShallowCopyType.cpp)."""
    kinds = {self.device.type, from_.device.type}
    return len(kinds) == 1 or kinds <= {"cpu", torch._C._get_privateuse1_backend_name()}


def register(supported) -> list:
    """Register the kernels of KERNELS whose op the target has; the registered names."""
    global _LIBRARY
    if _LIBRARY is None:
        _LIBRARY = torch.library.Library("aten", "IMPL")
    _LIBRARY.impl("_has_compatible_shallow_copy_type", has_compatible_shallow_copy_type, "PrivateUse1")
    done = []
    for name, fn in KERNELS.items():
        if supported is None or name in supported:
            _LIBRARY.impl(name, fn, "PrivateUse1")
            done.append(name)
    return done


# c10 ScalarType names (kb/sim/dtypes) of the dtypes a tensor may have here
SCALAR_TYPES = {"Byte": torch.uint8, "Char": torch.int8, "Short": torch.int16, "Int": torch.int32, "Long": torch.int64,
                "Half": torch.float16, "Float": torch.float32, "Double": torch.float64, "ComplexHalf": torch.complex32,
                "ComplexFloat": torch.complex64, "ComplexDouble": torch.complex128, "Bool": torch.bool,
                "BFloat16": torch.bfloat16}
DTYPE_NAMES = {dtype: name for name, dtype in SCALAR_TYPES.items()}


def _limit_check(op, limit):
    """A function that raises the vendor's message when the limited argument's dtype is not allowed (sim.dtypes:
    (op key, argument, allowed names, message, NotImplementedError)); None when the op has no such argument."""
    _, argument, allowed, message, not_implemented = limit
    names = [a.name for a in op._schema.arguments]
    if argument not in names:
        return None
    index, allowed = names.index(argument), {SCALAR_TYPES[name] for name in allowed}
    error = NotImplementedError if not_implemented else RuntimeError

    def check(args, kwargs):
        value = kwargs.get(argument, args[index] if index < len(args) else None)
        if isinstance(value, torch.Tensor) and value.dtype not in allowed:
            name = DTYPE_NAMES.get(value.dtype, str(value.dtype))
            raise error(message.replace("{dtype}", name).replace("{op}", op._schema.name.partition("::")[2]))

    return check


def _device_check(op, label: str, no_check: bool):
    """The device check a vendor's codegen'd wrapper makes before its kernel (as simdevice.cpp's check_devices):
    every positional and out= tensor on one device, 0-dim CPU ones included; a NoCheck op lets CPU index lists
    and 0-dim CPU tensors through.  Raises torch's own message."""
    method = f"wrapper_{label}_{op._schema.name.partition('::')[2]}"
    checked = [(i, a.name) for i, a in enumerate(op._schema.arguments) if not a.kwarg_only or a.is_out]

    def check(args, kwargs):
        common = None
        for i, name in checked:
            value = args[i] if i < len(args) else kwargs.get(name)
            for t in value if isinstance(value, (list, tuple)) else (value,):
                if not isinstance(t, torch.Tensor) or no_check and t.device.type == "cpu" and \
                        (isinstance(value, (list, tuple)) or t.dim() == 0):
                    continue
                if common is None:
                    common = t.device
                elif t.device != common:
                    raise RuntimeError(f"Expected all tensors to be on the same device, but got {name} is on "
                                       f"{t.device}, different from other tensors on {common} (when checking "
                                       f"argument in method {method})")

    return check


def _whole_op(op, device_type: str, host_alias, check=None, devices=None):
    """A kernel that runs `op` whole on CPU copies of its device tensors: autograd records the op's CPU
    decomposition between differentiable copies, and what the op wrote into an argument that needs no
    gradient (a running mean, which no schema annotates) is written back to the device.  Copies, not
    aliases of the device memory: the CPU graph may keep an argument for backward after the program
    has dropped it (LSTM's initial state)."""
    from torch.utils._pytree import tree_flatten, tree_map

    def kernel(*args, **kwargs):
        if devices is not None:
            devices(args, kwargs)
        if check is not None:
            check(args, kwargs)
        device_args = [v for v in tree_flatten((args, kwargs))[0]
                       if isinstance(v, torch.Tensor) and v.device.type == device_type]
        copies = {id(v): v.to("cpu") for v in device_args}

        def to_host(v):
            return copies[id(v)] if isinstance(v, torch.Tensor) and id(v) in copies else v

        out = op(*tree_map(to_host, args), **tree_map(to_host, kwargs))
        with torch.no_grad():
            for v in device_args:
                if not v.requires_grad and not _overlapping(v):   # an expanded tensor is never written to
                    host_alias(v).copy_(copies[id(v)])
        device = device_args[0].device if device_args else None
        return tree_map(lambda v: v.to(device) if isinstance(v, torch.Tensor) and device is not None else v, out)

    return kernel


def _overlapping(v) -> bool:
    """Whether elements of `v` share memory (an expanded view: a stride of 0 over more than one element); no op may
    write into such a tensor, and copying into it fails."""
    return any(stride == 0 and size > 1 for stride, size in zip(v.stride(), v.size()))


def _functional(schema) -> bool:
    """No argument or result aliases or writes (no view, in-place or out= op), and only tensors come back."""
    return (all(a.alias_info is None for a in (*schema.arguments, *schema.returns))
            and all(str(r.type) in ("Tensor", "List[Tensor]") for r in schema.returns) and len(schema.returns) > 0)


def register_whole_ops(names, device_type: str, host_alias, limits=(), label: str = "", no_check=()) -> list:
    """Register a whole-op kernel (PrivateUse1 and its autograd key) for each composite op the vendor
    implements itself (sim.vendor_composites), that is functional; the registered names.  It checks its tensors'
    devices as the vendor's wrapper does (`label`: the device as its messages name it; `no_check`: ops whose
    wrapper lets CPU index lists and 0-dim CPU tensors through), then an op with a dtype limit
    (sim.dtypes.for_device; "name.overload", "name.default" or "name") checks it."""
    by_key = {limit[0]: limit for limit in limits}
    global _LIBRARY
    if _LIBRARY is None:
        _LIBRARY = torch.library.Library("aten", "IMPL")
    done = []
    for name in names:
        base, _, overload = name.partition(".")
        packet = getattr(torch.ops.aten, base, None)
        op = getattr(packet, overload or "default", None) if packet is not None else None
        if op is None or not _functional(op._schema) or torch._C._dispatch_has_kernel_for_dispatch_key(
                f"aten::{name}", "PrivateUse1"):   # a kernel already (mish_backward: CPU and composite)
            continue
        limit = by_key.get(name if overload else f"{base}.default") or by_key.get(base)
        kernel = _whole_op(op, device_type, host_alias, limit and _limit_check(op, limit),
                           _device_check(op, label or device_type.upper(), name in no_check))
        _LIBRARY.impl(name, kernel, "PrivateUse1")
        _LIBRARY.impl(name, kernel, "AutogradPrivateUse1")
        done.append(name)
    return done
