"""MIG401: the TorchScript runtime in C/C++ servers: `torch::jit::load`, `torch::jit::Module`,
`<torch/script.h>` and `torch/csrc/jit` includes, `torch::jit::` runtime settings."""

from __future__ import annotations

import functools
from pathlib import PurePosixPath

from migrate.analysis import native_source
from migrate.checks import _cpp_aoti, _native
from migrate.checks.base import FileContext, TextGroupFix
from migrate.findings import Applicability, FixKind

EXECUTORCH = "load a `.pte` with `executorch::extension::Module` (`module.forward(inputs)`)"
AOTI = "on server GPUs a `.pt2` with `torch::inductor::AOTIModelPackageLoader`"


class CppTorchScriptRuntime(_native.NativeCheck):
    code = "MIG401"
    prefilter = r"jit|torch/script\.h"
    languages = frozenset({native_source.C})

    def applies_to(self, path: PurePosixPath) -> bool:
        return super().applies_to(path) and not path.name.lower().endswith(
            native_source.OBJC_SUFFIXES
        )

    def scan(self, ctx: FileContext, tokens: list[native_source.Token], lang: str) -> None:
        if native_source.is_objc(ctx.posix, tokens):
            return  # an Objective-C header: MIG403
        uses = [
            u
            for u in native_source.cpp_uses(tokens, native_source.unqualified_names())
            if not native_source.POD_HEADER.match(u.symbol)
        ]
        if self.options.get("intent") == "drop" and uses:
            self._drop(ctx, tokens, uses)
            return
        for use in uses:
            self.report(
                ctx,
                use.start,
                use.end,
                f"{native_source.describe_use(use.symbol, use.what)}; {EXECUTORCH}, or {AOTI}",
                use.symbol,
                fix=FixKind.MANUAL,
                loads=use.symbol.rsplit("::", 1)[-1] in native_source.LOADERS,
            )

    def _drop(self, ctx: FileContext, tokens: list[native_source.Token], uses) -> None:
        """Intent drop: the file moves to AOTInductor's package loader, every use together,
        or each use says the exact edit to make by hand."""
        plan = _cpp_aoti.rewrite(ctx.text, tokens, uses, dropped_settings())
        if plan.refusal:
            line = ctx.text.count("\n", 0, plan.refusal_at) + 1
            for use in uses:
                self.report(
                    ctx,
                    use.start,
                    use.end,
                    f"{native_source.describe_use(use.symbol, use.what)}; not moved to AOTInductor "
                    f"(intent drop): {plan.refusal} (line {line}); by hand: "
                    f"{_cpp_aoti.recipe(use)}",
                    use.symbol,
                    fix=FixKind.MANUAL,
                    loads=use.symbol.rsplit("::", 1)[-1] in native_source.LOADERS,
                )
            return
        packages = ", ".join(
            f"`{package}` (`migrate convert {archive} --aoti` writes it)"
            for archive, package in dict.fromkeys(plan.packages)
        )
        where = f"; it loads {packages}" if packages else _path_note(tokens)
        group = TextGroupFix(tuple(ctx.key(self.code, u.start) for u in uses))
        for k, use in enumerate(uses):
            self.report(
                ctx,
                use.start,
                use.end,
                f"{native_source.describe_use(use.symbol, use.what)}; the repository drops "
                f"TorchScript (intent drop): this file moves to AOTInductor's "
                f"`{_cpp_aoti.LOADER}`{where}",
                use.symbol,
                fix=FixKind.AUTO,
                edits=plan.edits[k],
                applicability=Applicability.UNSAFE,
                group=group,
                loads=use.symbol.rsplit("::", 1)[-1] in native_source.LOADERS,
                packages=tuple(p for _, p in plan.packages),
            )


def _path_note(tokens: list[native_source.Token]) -> str:
    """Where the load's path comes from elsewhere (a parameter, argv): what to give it."""
    named = native_source.archive_names(tokens)
    if named:
        return "; give it " + ", ".join(
            f"`{_cpp_aoti.package_for(a)}` (`migrate convert {a} --aoti` writes it), not `{a}`"
            for a in named
        )
    return "; give it the package `migrate convert ARCHIVE --aoti` writes (`<stem>.aoti.pt2`)"


@functools.lru_cache(maxsize=1)
def dropped_settings() -> frozenset[str]:
    """The runtime settings whose statements go with the loader (MIG401's rule data)."""
    from migrate.registry import all_rules

    rule = all_rules().get("MIG401")
    names = rule.extra.get("dropped_settings") if rule else None
    return frozenset(str(n) for n in names or ())
