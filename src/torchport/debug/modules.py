"""Which module an aten op belongs to, by attribute path (`backbone.layer3.0.conv1`).

Forward: global module pre/post hooks keep a stack of the modules being run.  A module called
with an empty stack is a root: its `named_modules()` give every path below it, so scripts need
not hand their model over (a model given explicitly is named the same way).  The roots are kept
(`roots`: whose parameters a dump records), and `on_root_end(module)`, when set, is called when a
root's forward returns (a step of an inference script).

Backward: autograd runs without module hooks.  When a module returns, a pre-hook goes on the
autograd node of each output: when backward reaches it, the module becomes the current backward
module.  When a module starts, a pre-hook goes on the nodes that made its inputs: when backward
reaches them, the module is done and its caller is current again.  Exact for chains of layers
and for functional code between them; approximate where branches merge.
"""
from __future__ import annotations

import torch
from torch.nn.modules import module as nn_module

ROOT = "(root)"


class ModuleTracker:
    def __init__(self, models=()):
        self.paths: dict = {}          # id(module) -> path
        self.stack: list = []
        self.backward_path = ""
        self._nodes: dict = {}         # id(autograd node) -> path (innermost module wins)
        self._handles = []
        self.roots: list = []          # the models given, then each module first called at top level
        self.on_root_end = None
        for model in models:
            self.name(model)

    # ----------------------------------------------------------------- naming
    def name(self, root: torch.nn.Module) -> None:
        if id(root) not in self.paths:
            self.roots.append(root)
        for path, m in root.named_modules():
            self.paths.setdefault(id(m), path or ROOT)

    @property
    def current(self) -> str:
        """The module running now: the innermost forward module, or the backward one."""
        if torch._C._current_graph_task_id() != -1:
            return self.backward_path
        return self.stack[-1] if self.stack else ""

    # ----------------------------------------------------------------- hooks
    def _pre(self, module, args):
        key = id(module)
        if not self.stack:  # a new top-level forward: the last backward is over
            self._nodes.clear()
            self.backward_path = ""
        if key not in self.paths:
            if not self.stack:
                self.name(module)
            else:  # a module created or attached on the fly: name it under its caller
                self.paths[key] = f"{self.stack[-1]}.<{type(module).__name__}>"
        if torch.is_grad_enabled():  # backward reaching this module's inputs has left it: back to the caller
            self._on_backward(args, self.stack[-1] if self.stack else "")
        self.stack.append(self.paths[key])

    def _on_backward(self, tensors, path: str) -> None:
        """When backward reaches the nodes that made `tensors`, `path` becomes the backward module.
        One hook per node: the first module to claim it (the one whose output it is) keeps it."""
        for t in _tensors(tensors):
            node = t.grad_fn
            if node is not None and id(node) not in self._nodes:
                self._nodes[id(node)] = path
                node.register_prehook(self._enter_backward(path))

    def _post(self, module, args, output):
        path = self.paths.get(id(module), "")
        if self.stack and self.stack[-1] == path:
            self.stack.pop()
        elif path in self.stack:  # an exception skipped some post-hooks: unwind to this module
            del self.stack[self.stack.index(path):]
        if torch.is_grad_enabled():
            self._on_backward(output, path)
        if not self.stack and self.on_root_end is not None and torch._C._current_graph_task_id() == -1:
            self.on_root_end(module)  # not in backward: a checkpointed block recomputed there is no step

    def _enter_backward(self, path):
        def prehook(grad_outputs):
            self.backward_path = path
        return prehook

    def __enter__(self):
        self._handles = [nn_module.register_module_forward_pre_hook(self._pre),
                         nn_module.register_module_forward_hook(self._post)]
        return self

    def __exit__(self, *exc):
        for h in self._handles:
            h.remove()
        self._handles = []
        self.stack.clear()
        self._nodes.clear()
        return False


def _tensors(obj, depth: int = 0):
    if isinstance(obj, torch.Tensor):
        yield obj
    elif depth < 3 and isinstance(obj, (list, tuple)):
        for x in obj:
            yield from _tensors(x, depth + 1)
    elif depth < 3 and isinstance(obj, dict):
        for x in obj.values():
            yield from _tensors(x, depth + 1)
