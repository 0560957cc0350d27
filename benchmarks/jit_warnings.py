"""Which TorchScript APIs warn in the installed torch (the list `--intent keep-scriptable`
follows, migrate.plan.fixplan.WARNING_RULES). Each API is defined and called in a fresh
`warnings.catch_warnings(record=True)`; prints `API<TAB>WARNS|silent<TAB>messages`.

    python benchmarks/jit_warnings.py
"""

from __future__ import annotations

import io
import os
import tempfile
import warnings

import torch
from torch import nn


class _Net(nn.Module):
    def forward(self, x):
        return x + 1


def _fn(x):
    return x * 2


def _decorated_script():
    @torch.jit.script
    def g(x):
        return x - 1


def _method_decorator(decorator):
    def probe():
        class A(nn.Module):
            @decorator
            def helper(self, x):
                return x

            def forward(self, x):
                return self.helper(x)

        A()(torch.ones(1))

    return probe


def _final():
    class A(nn.Module):
        c: torch.jit.Final[int] = 3

    A()


def _interface():
    @torch.jit.interface
    class Api(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            pass


def _overload_method():
    class A(nn.Module):
        @torch.jit._overload_method
        def forward(self, x: int) -> int: ...

        def forward(self, x):  # noqa: F811
            return x

    A()(1)


def _overload():
    @torch.jit._overload
    def k(x: int) -> int: ...


def _script_if_tracing():
    @torch.jit.script_if_tracing
    def k(x):
        return x

    k(torch.ones(1))


def _script_method():
    class A(torch.jit.ScriptModule):
        @torch.jit.script_method
        def forward(self, x):
            return x

    A()


def _archive() -> bytes:
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.jit.save(torch.jit.script(_Net()), buffer)
    return buffer.getvalue()


def _scripted():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.jit.script(_Net()).eval()


def _lite_path() -> str:
    path = os.path.join(tempfile.mkdtemp(), "m.ptl")
    _scripted()._save_for_lite_interpreter(path)
    return path


def _load_lite():
    from torch.jit.mobile import _load_for_lite_interpreter

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        path = _lite_path()
    _load_for_lite_interpreter(path)


def _optimize_for_mobile():
    from torch.utils.mobile_optimizer import optimize_for_mobile

    optimize_for_mobile(_scripted())


PROBES = {
    "torch.jit.script(fn)": lambda: torch.jit.script(_fn),
    "@torch.jit.script": _decorated_script,
    "torch.jit.script(module)": lambda: torch.jit.script(_Net()),
    "torch.jit.trace": lambda: torch.jit.trace(_Net(), torch.ones(2)),
    "torch.jit.trace_module": lambda: torch.jit.trace_module(_Net(), {"forward": torch.ones(2)}),
    "torch.jit.save": lambda: torch.jit.save(_scripted(), io.BytesIO()),
    # ScriptModule.save takes a path only (it calls str() on a buffer): a file in a temp folder.
    "ScriptModule.save": lambda: _scripted().save(os.path.join(tempfile.mkdtemp(), "m.pt")),
    "torch.jit.load": lambda: torch.jit.load(io.BytesIO(_archive())),
    "torch.jit.freeze": lambda: torch.jit.freeze(_scripted()),
    "torch.jit.optimize_for_inference": lambda: torch.jit.optimize_for_inference(_scripted()),
    "@torch.jit.ignore": _method_decorator(torch.jit.ignore),
    "@torch.jit.unused": _method_decorator(torch.jit.unused),
    "@torch.jit.export": _method_decorator(torch.jit.export),
    "torch.jit.is_scripting()": torch.jit.is_scripting,
    "torch.jit.is_tracing()": torch.jit.is_tracing,
    "torch.jit.annotate": lambda: torch.jit.annotate(list[int], []),
    "torch.jit.Final": _final,
    "torch.jit.Attribute": lambda: torch.jit.Attribute(1, int),
    "@torch.jit.interface": _interface,
    "@torch.jit._overload_method": _overload_method,
    "@torch.jit._overload": _overload,
    "@torch.jit.script_if_tracing": _script_if_tracing,
    "torch.jit.isinstance": lambda: torch.jit.isinstance([1], list[int]),
    "torch.jit.fork / wait": lambda: torch.jit.wait(torch.jit.fork(_fn, torch.ones(1))),
    "torch.jit.ScriptModule + script_method": _script_method,
    "torch.jit.CompilationUnit": lambda: torch.jit.CompilationUnit("def f(x):\n    return x\n"),
    "_save_for_lite_interpreter": _lite_path,
    "_load_for_lite_interpreter": _load_lite,
    "optimize_for_mobile": _optimize_for_mobile,
}


def main() -> None:
    print(f"torch {torch.__version__}")
    for name, probe in PROBES.items():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                probe()
                note = ""
            except Exception as exc:  # a build without XNNPACK cannot optimize for mobile
                note = f" (raised {type(exc).__name__})"
        messages = sorted({f"{w.category.__name__}: {str(w.message)[:60]}" for w in caught})
        print(f"{name}\t{'WARNS' if messages else 'silent'}{note}\t{' | '.join(messages)}")


if __name__ == "__main__":
    main()
