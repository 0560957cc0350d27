"""MIG402: PyTorch Android: `org.pytorch` imports and loading calls in Java/Kotlin, and the
`org.pytorch:pytorch_android(_lite)` dependency in Gradle files."""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from migrate.analysis import native_source
from migrate.checks import _native
from migrate.checks.base import FileContext

TARGET = (
    "use the ExecuTorch Android library (`org.pytorch.executorch.Module`, `EValue`) on a `.pte`"
)
DEPENDENCY = re.compile(r"^org\.pytorch:(?P<artifact>pytorch_android[\w-]*)(?::[^:\s]*)?$")
ARTIFACT = re.compile(r"^pytorch_android[\w-]*$")


def is_gradle(path: PurePosixPath) -> bool:
    return path.name.lower().endswith((".gradle", ".gradle.kts"))


class AndroidPytorchRuntime(_native.NativeCheck):
    code = "MIG402"
    prefilter = r"pytorch"
    languages = frozenset({native_source.JAVA, native_source.KOTLIN, native_source.GROOVY})

    def scan(self, ctx: FileContext, tokens: list[native_source.Token], lang: str) -> None:
        if is_gradle(ctx.posix):
            self.scan_gradle(ctx, tokens)
        else:
            self.scan_source(ctx, tokens)

    def scan_gradle(self, ctx: FileContext, tokens: list[native_source.Token]) -> None:
        """`implementation 'org.pytorch:pytorch_android_lite:1.13.1'`, also as
        `group: 'org.pytorch', name: 'pytorch_android'`."""
        strings = [t for t in tokens if t.kind == "string"]
        grouped = any(t.text == "org.pytorch" for t in strings)
        for tok in strings:
            m = DEPENDENCY.match(tok.text.strip())
            artifact = m.group("artifact") if m else None
            if artifact is None and grouped and ARTIFACT.match(tok.text.strip()):
                artifact = tok.text.strip()
            if artifact is None:
                continue
            self.report(
                ctx,
                tok.start,
                tok.end,
                f"`org.pytorch:{artifact}` is PyTorch Android (TorchScript); depend on "
                "`org.pytorch:executorch-android` instead and load a `.pte`",
                f"org.pytorch:{artifact}",
            )

    def scan_source(self, ctx: FileContext, tokens: list[native_source.Token]) -> None:
        classes = {str(c) for c in self.rule.extra.get("android_classes") or ()}
        load_calls = {
            str(k): {str(m) for m in v}
            for k, v in (self.rule.extra.get("load_calls") or {}).items()
        }
        imported: dict[str, tuple[str, ...]] = {}  # simple name (or alias) -> qualified
        wildcard = False
        found: list[tuple[int, int, str, str, bool]] = []
        for chain in native_source.chains(tokens, "."):
            before = tokens[chain.index - 1] if chain.index else None
            if before is not None and before.text == "package":
                continue
            if chain.member:
                continue
            is_import = before is not None and (
                before.text == "import"
                or (
                    before.text == "static"
                    and chain.index >= 2
                    and tokens[chain.index - 2].text == "import"
                )
            )
            parts = chain.parts
            if is_import:
                star = (
                    chain.after + 1 < len(tokens)
                    and tokens[chain.after].text == "."
                    and tokens[chain.after + 1].text == "*"
                )
                alias = _alias(tokens, chain.after)
                if not star:
                    imported[alias or parts[-1]] = parts
                if _pytorch(parts, classes, star):
                    wildcard = wildcard or (star and parts == ("org", "pytorch"))
                    end = tokens[chain.after + 1].end if star else chain.end
                    name = ".".join(parts) + (".*" if star else "")
                    found.append(
                        (chain.start, end, name, f"`import {name}` is PyTorch Android", False)
                    )
                continue
            if parts[:2] == ("org", "pytorch") and _pytorch(parts, classes, False):
                name = ".".join(parts)
                found.append(
                    (
                        chain.start,
                        chain.end,
                        name,
                        f"`{name}` is PyTorch Android",
                        _loads(parts[2:], load_calls),
                    )
                )
                continue
            # `Module.load(...)` where `Module` is org.pytorch's (imported, aliased, or `*`).
            if len(parts) != 2:
                continue
            origin = imported.get(parts[0])
            if origin is None and wildcard:
                origin = ("org", "pytorch", parts[0])
            follow = tokens[chain.after] if chain.after < len(tokens) else None
            if (
                origin is not None
                and len(origin) == 3
                and origin[:2] == ("org", "pytorch")
                and parts[1] in load_calls.get(origin[2], ())
                and follow is not None
                and follow.text == "("
            ):
                found.append(
                    (
                        chain.start,
                        chain.end,
                        f"org.pytorch.{origin[2]}.{parts[1]}",
                        f"`{'.'.join(parts)}` loads a TorchScript lite-interpreter archive",
                        True,
                    )
                )
        for start, end, symbol, head, loads in found:
            self.report(ctx, start, end, f"{head}; {TARGET}", symbol, loads=loads)


def _pytorch(parts: tuple[str, ...], classes: set[str], star: bool) -> bool:
    """`org.pytorch.<one of PyTorch Android's classes>` (not `org.pytorch.executorch`, not an
    app of its own under an `org.pytorch.*` package)."""
    if parts[:2] != ("org", "pytorch"):
        return False
    if len(parts) == 2:
        return star
    return parts[2] in classes


def _loads(rest: tuple[str, ...], load_calls: dict[str, set[str]]) -> bool:
    return len(rest) == 2 and rest[1] in load_calls.get(rest[0], ())


def _alias(tokens: list[native_source.Token], after: int) -> str | None:
    """Kotlin's `import org.pytorch.Module as PtModule`."""
    if after + 1 < len(tokens) and tokens[after].text == "as" and tokens[after + 1].kind == "name":
        return tokens[after + 1].text
    return None
