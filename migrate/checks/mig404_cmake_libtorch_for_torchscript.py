"""MIG404: `find_package(Torch)` and `${TORCH_LIBRARIES}` links in CMake files. Reported as
candidates; the repository scan keeps them only when the project's sources use the
TorchScript runtime (migrate.facts.serving)."""

from __future__ import annotations

from migrate.analysis import native_source
from migrate.checks import _native
from migrate.checks.base import FileContext

TARGET = (
    "link ExecuTorch (`find_package(executorch)`, `extension_module_static`, `xnnpack_backend`) "
    "once the sources load a `.pte`; keep it only for AOTInductor's loader"
)
LINK_COMMANDS = frozenset({"target_link_libraries", "link_libraries"})


class CmakeLibtorchForTorchscript(_native.NativeCheck):
    code = "MIG404"
    prefilter = r"Torch|TORCH_|torch"
    languages = frozenset({native_source.CMAKE})

    def scan(self, ctx: FileContext, tokens: list[native_source.Token], lang: str) -> None:
        for name, args in _commands(tokens):
            command = name.text.lower()
            if command == "find_package" and args and args[0].text == "Torch":
                self.report(
                    ctx,
                    name.start,
                    args[0].end,
                    f"`find_package(Torch)` builds against libtorch for the TorchScript runtime; "
                    f"{TARGET}",
                    "find_package(Torch)",
                    cmake_project=True,
                )
            elif command in LINK_COMMANDS:
                for arg in args[1:]:
                    if _links_torch(arg, args):
                        self.report(
                            ctx,
                            arg.start,
                            arg.end,
                            f"links libtorch (`{_spelling(arg)}`) for the TorchScript runtime; "
                            f"{TARGET}",
                            "TORCH_LIBRARIES",
                            cmake_project=True,
                        )


def _commands(tokens: list[native_source.Token]):
    """(command name token, its argument tokens) for every `name(...)` invocation."""
    k, n = 0, len(tokens)
    while k < n - 1:
        tok = tokens[k]
        if tok.kind == "name" and tokens[k + 1].text == "(":
            depth, j, args = 1, k + 2, []
            while j < n and depth:
                t = tokens[j]
                if t.text == "(" and t.kind == "punct":
                    depth += 1
                elif t.text == ")" and t.kind == "punct":
                    depth -= 1
                if depth:
                    args.append(t)
                j += 1
            yield tok, _merge_refs(args)
            k = j
            continue
        k += 1


def _merge_refs(args: list[native_source.Token]) -> list[native_source.Token]:
    """`$`, `{`, `TORCH_LIBRARIES`, `}` as one token `${TORCH_LIBRARIES}`."""
    out: list[native_source.Token] = []
    k = 0
    while k < len(args):
        a = args[k]
        if (
            a.text == "$"
            and k + 3 < len(args)
            and args[k + 1].text == "{"
            and args[k + 2].kind == "name"
            and args[k + 3].text == "}"
        ):
            name = args[k + 2].text
            out.append(native_source.Token("name", "${" + name + "}", a.start, args[k + 3].end))
            k += 4
            continue
        out.append(a)
        k += 1
    return out


def _links_torch(arg: native_source.Token, args: list[native_source.Token]) -> bool:
    if arg.kind == "string":
        return "${TORCH_LIBRARIES}" in arg.text
    return arg.text in ("${TORCH_LIBRARIES}", "torch")


def _spelling(arg: native_source.Token) -> str:
    return f'"{arg.text}"' if arg.kind == "string" else arg.text
