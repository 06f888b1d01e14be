"""Loaded by every Python child of a `torchport run` (PYTHONPATH points here): patches the process
for TORCHPORT_TARGET when, and only when, it imports torch; then runs the sitecustomize this
one shadows, if any.  Processes that never import torch pay nothing."""
import os
import sys


def _install():
    import importlib.abc
    import importlib.machinery

    class TorchWatcher(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name != "torch":
                return None
            sys.meta_path.remove(self)
            spec = importlib.machinery.PathFinder.find_spec(name, path)
            if spec is None or spec.loader is None:
                return spec
            loader_exec = spec.loader.exec_module

            def exec_module(module):
                loader_exec(module)
                try:
                    from torchport.runtime import patch
                    patch()
                except Exception as e:  # never break the child: say why it is not patched
                    sys.stderr.write(f"torchport: this process is not patched: {e}\n")

            spec.loader.exec_module = exec_module
            return spec

    sys.meta_path.insert(0, TorchWatcher())


def _chain():
    """Run the next sitecustomize on sys.path (the one this file shadows)."""
    import importlib.machinery
    import importlib.util

    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is not None and spec.loader is not None:
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)


if os.environ.get("TORCHPORT_TARGET"):
    if "torch" in sys.modules:
        from torchport.runtime import patch
        patch()
    else:
        _install()
_chain()
