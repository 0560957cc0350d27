"""MIG401: the TorchScript runtime in C/C++ servers: `torch::jit::load`, `torch::jit::Module`,
`<torch/script.h>` and `torch/csrc/jit` includes, `torch::jit::` runtime settings."""

from __future__ import annotations

from pathlib import PurePosixPath

from migrate.checks import _native
from migrate.checks.base import FileContext

EXECUTORCH = "load a `.pte` with `executorch::extension::Module` (`module.forward(inputs)`)"
AOTI = "on server GPUs a `.pt2` with `torch::inductor::AOTIModelPackageLoader`"


def describe(symbol: str, what: str) -> str:
    """The head of a C++/Objective-C++ finding: what the runtime use is."""
    if what == "include":
        return f"including `<{symbol}>` pulls in the TorchScript runtime"
    last = symbol.rsplit("::", 1)[-1]
    if last in _native.LOADERS:
        return f"`{symbol}` loads a TorchScript archive"
    if last in _native.TYPES:
        return f"`{symbol}` is a TorchScript module type"
    if last in _native.VALUES:
        return f"`{symbol}` is a TorchScript value (ExecuTorch passes a list of `EValue`s)"
    return (
        f"`{symbol}` is a TorchScript runtime setting or pass, with no counterpart in ExecuTorch "
        "or AOTInductor: drop it when the loader moves"
    )


class CppTorchScriptRuntime(_native.NativeCheck):
    code = "MIG401"
    prefilter = r"jit|torch/script\.h"
    languages = frozenset({_native.C})

    def applies_to(self, path: PurePosixPath) -> bool:
        return super().applies_to(path) and not path.name.lower().endswith(_native.OBJC_SUFFIXES)

    def scan(self, ctx: FileContext, tokens: list[_native.Token], lang: str) -> None:
        if _native.is_objc(ctx.posix, tokens):
            return  # an Objective-C header: MIG403
        for use in _native.cpp_uses(tokens, _native.unqualified_names()):
            if _native.POD_HEADER.match(use.symbol):
                continue
            self.report(
                ctx,
                use.start,
                use.end,
                f"{describe(use.symbol, use.what)}; {EXECUTORCH}, or {AOTI}",
                use.symbol,
                loads=use.symbol.rsplit("::", 1)[-1] in _native.LOADERS,
            )
