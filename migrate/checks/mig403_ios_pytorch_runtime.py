"""MIG403: PyTorch iOS: `torch::jit::_load_for_mobile` / `torch::jit::mobile::Module` in
Objective-C(++), LibTorch headers, and the `LibTorch`/`LibTorch-Lite` pods."""

from __future__ import annotations

from pathlib import PurePosixPath

from migrate.analysis import native_source
from migrate.checks import _native
from migrate.checks.base import FileContext

TARGET = "use ExecuTorch's Apple runtime (`ExecuTorchModule` / Swift `Module`) on a `.pte`"


class IosPytorchRuntime(_native.NativeCheck):
    code = "MIG403"
    prefilter = r"jit|LibTorch|torch/script\.h"
    languages = frozenset({native_source.C, native_source.RUBY})

    def applies_to(self, path: PurePosixPath) -> bool:
        lang = native_source.language(path)
        if lang == native_source.RUBY:
            return True
        return lang == native_source.C and path.name.lower().endswith(
            (*native_source.OBJC_SUFFIXES, ".h")
        )

    def scan(self, ctx: FileContext, tokens: list[native_source.Token], lang: str) -> None:
        if lang == native_source.RUBY:
            self.scan_pods(ctx, tokens)
            return
        if not native_source.is_objc(ctx.posix, tokens):
            return  # a C/C++ header: MIG401
        for use in native_source.cpp_uses(tokens, native_source.unqualified_names()):
            self.report(
                ctx,
                use.start,
                use.end,
                f"{native_source.describe_use(use.symbol, use.what)}; {TARGET}",
                use.symbol,
                loads=use.symbol.rsplit("::", 1)[-1] in native_source.LOADERS,
            )

    def scan_pods(self, ctx: FileContext, tokens: list[native_source.Token]) -> None:
        """`pod 'LibTorch-Lite'` (Podfile) and `s.dependency 'LibTorch'` (.podspec)."""
        pods = {str(p) for p in self.rule.extra.get("pods") or ()}
        for k, tok in enumerate(tokens[:-1]):
            if tok.kind != "name" or tok.text not in ("pod", "dependency"):
                continue
            if k and tokens[k - 1].text == "." and tok.text == "pod":
                continue
            arg = tokens[k + 1]
            if arg.text == "(" and k + 2 < len(tokens):
                arg = tokens[k + 2]
            if arg.kind != "string" or arg.text.split("/", 1)[0] not in pods:
                continue
            self.report(
                ctx,
                arg.start,
                arg.end,
                f"the `{arg.text}` pod is PyTorch iOS (TorchScript lite interpreter); replace it "
                "with the `executorch` Swift package and load a `.pte`",
                arg.text,
            )
