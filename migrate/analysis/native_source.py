"""Serving code outside Python, read as tokens: which language a file is, a tokenizer that drops comments and keeps string literals apart from code, and the
qualified names (`torch::jit::load`, `org.pytorch.Module`) the checks match.

No C++/Java parser: tokens are enough to keep comments, strings and look-alike names
(`my::jit::load`, `torch_jit_load`, a user's `load`) from matching.
"""

from __future__ import annotations

import functools
import posixpath
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import NamedTuple

# Languages (see `language`).
C = "c"  # C, C++, CUDA, Objective-C(++)
JAVA = "java"
KOTLIN = "kotlin"  # .kt and Gradle's Kotlin DSL (.gradle.kts)
GROOVY = "groovy"  # build.gradle
CMAKE = "cmake"
RUBY = "ruby"  # Podfile, .podspec

C_SUFFIXES = (".cpp", ".cc", ".cxx", ".c++", ".c", ".hpp", ".hh", ".hxx", ".h", ".cu", ".cuh")
OBJC_SUFFIXES = (".mm", ".m")

# File names of TorchScript archives: a string literal with one of these is what a Python
# producer's path is compared with (by base name).
ARCHIVE_SUFFIXES = (".pt", ".pth", ".ptl", ".torchscript")


def language(path: PurePosixPath) -> str | None:
    """The language of a file by its name, or None for files no MIG4xx check reads."""
    name = path.name.lower()
    if name.endswith((".gradle.kts", ".kt", ".kts")):
        return KOTLIN
    if name.endswith(".gradle"):
        return GROOVY
    if name.endswith(".java"):
        return JAVA
    if name == "cmakelists.txt" or name.endswith(".cmake"):
        return CMAKE
    if name == "podfile" or name.endswith(".podspec"):
        return RUBY
    if name.endswith(C_SUFFIXES + OBJC_SUFFIXES):
        return C
    return None


class Token(NamedTuple):
    """One token: `name`, `string` (text: the contents, quotes dropped), `include` (text: the
    header of an #include/#import line) or `punct`. Offsets are the token's span."""

    kind: str
    text: str
    start: int
    end: int


# Every alternative is one outer named group (its kind); bodies are inner groups. Blanks
# before a token are part of its match (one regex call per token, not two).
_LINE = r"(?P<comment>//[^\n]*)"
_BLOCK = r"(?P<block>/\*.*?(?:\*/|\Z))"
_NESTED_BLOCK = r"(?P<nested_block>/\*)"  # Kotlin nests them: found by _block_end
_NUM = r"(?P<num>\.?\d(?:[eEpP][+-]|[\w.'])*)"
_NAME = r"(?P<name>[A-Za-z_$][\w$]*)"
_PUNCT = r"(?P<punct>::|->|\S)"
_DQ = r'(?P<dq>"(?P<dq_body>(?:[^"\\\n]|\\.)*)"?)'
_SQ = r"(?P<sq>'(?P<sq_body>(?:[^'\\\n]|\\.)*)'?)"
_TEXT_BLOCK = r'(?P<text_block>"""(?P<text_block_body>.*?)(?:"""|\Z))'

_PATTERNS = {
    C: [
        _LINE,
        _BLOCK,
        r"(?P<include>#[ \t]*(?:include_next|include|import)[ \t]*"
        r'(?:<(?P<angle>[^>\n]*)>?|"(?P<quoted>[^"\n]*)"?))',
        # Raw strings R"delim( ... )delim" and prefixed literals (u8"", L'x').
        r'(?P<raw>(?:u8|u|U|L)?R"(?P<delim>[^()\\\s"]{0,16})\((?P<raw_body>.*?)\)(?P=delim)")',
        r"(?:u8|u|U|L)?" + _DQ,
        r"(?:u8|u|U|L)?" + _SQ,
        _NUM,
        _NAME,
        _PUNCT,
    ],
    JAVA: [_LINE, _BLOCK, _TEXT_BLOCK, _DQ, _SQ, _NUM, _NAME, _PUNCT],
    KOTLIN: [_LINE, _NESTED_BLOCK, _TEXT_BLOCK, _DQ, _SQ, _NUM, _NAME, _PUNCT],
    GROOVY: [
        _LINE,
        _BLOCK,
        _TEXT_BLOCK,
        r"(?P<text_block_sq>'''(?P<text_block_sq_body>.*?)(?:'''|\Z))",
        _DQ,
        _SQ,
        _NUM,
        _NAME,
        _PUNCT,
    ],
    CMAKE: [
        r"(?P<bracket_comment>#\[(?P<eq1>=*)\[.*?(?:\](?P=eq1)\]|\Z))",
        r"(?P<comment>#[^\n]*)",
        r"(?P<bracket>\[(?P<eq2>=*)\[(?P<bracket_body>.*?)(?:\](?P=eq2)\]|\Z))",
        r'(?P<dq>"(?P<dq_body>(?:[^"\\]|\\.)*)"?)',
        r"(?P<name>[A-Za-z_@][\w.+-]*)",
        _PUNCT,
    ],
    RUBY: [
        r"(?P<bracket_comment>^=begin\b.*?(?:^=end\b[^\n]*|\Z))",
        r"(?P<comment>#[^\n]*)",
        _DQ,
        _SQ,
        r"(?P<name>[A-Za-z_]\w*[?!]?)",
        _PUNCT,
    ],
}

_STRINGS = {
    "raw": "raw_body",
    "dq": "dq_body",
    "sq": "sq_body",
    "text_block": "text_block_body",
    "text_block_sq": "text_block_sq_body",
    "bracket": "bracket_body",
}
_SKIPPED = frozenset({"comment", "block", "bracket_comment", "num"})


@functools.cache
def _master(lang: str) -> re.Pattern[str]:
    return re.compile(r"\s*(?:" + "|".join(_PATTERNS[lang]) + ")", re.S | re.M)


def _block_end(text: str, start: int) -> int:
    """The end of a Kotlin /* */ comment opened at `start` (they nest)."""
    depth, pos = 0, start
    opener = re.compile(r"/\*|\*/")
    while True:
        m = opener.search(text, pos)
        if m is None:
            return len(text)
        depth += 1 if m.group() == "/*" else -1
        pos = m.end()
        if depth == 0:
            return pos


def _line_start(text: str, pos: int) -> bool:
    """Whether only blanks precede `pos` on its line (a preprocessor directive)."""
    i = pos - 1
    while i >= 0 and text[i] in " \t":
        i -= 1
    return i < 0 or text[i] == "\n"


def tokenize(text: str, lang: str) -> list[Token]:
    """Code tokens of a file: comments dropped, string literals as `string` tokens."""
    match = _master(lang).match
    out: list[Token] = []
    append = out.append
    pos, size = 0, len(text)
    while pos < size:
        m = match(text, pos)
        if m is None:  # only blanks are left
            break
        kind = m.lastgroup
        start, end = m.start(kind), m.end()
        if kind == "name" or kind == "punct":
            append(Token(kind, m.group(kind), start, end))
        elif kind in _SKIPPED:
            pass
        elif kind == "nested_block":
            end = _block_end(text, start)
        elif kind == "include":
            if _line_start(text, start):
                header = m.group("angle") if m.group("angle") is not None else m.group("quoted")
                append(Token("include", header or "", start, end))
            else:  # `#include` not at a line start: only the `#`
                end = start + 1
                append(Token("punct", "#", start, end))
        else:
            append(Token("string", m.group(_STRINGS[kind]) or "", start, end))
        pos = end
    return out


@dataclass(frozen=True, slots=True)
class Chain:
    """A qualified name as written: its parts, span, and the tokens around it."""

    parts: tuple[str, ...]
    start: int
    end: int
    index: int  # index of its first token
    after: int  # index of the token after it
    member: bool  # preceded by `.`, `->` or `::` (a member or a qualified tail)


def chains(tokens: list[Token], separator: str) -> Iterator[Chain]:
    """Maximal `a::b::c` (C++) or `a.b.c` (Java/Kotlin) runs of names, left to right.

    A C++ chain that starts with `::` (global qualification) starts at the name after it."""
    i, n = 0, len(tokens)
    while i < n:
        tok = tokens[i]
        if tok.kind != "name":
            i += 1
            continue
        parts = [tok.text]
        j = i + 1
        while (
            j + 1 < n
            and tokens[j].kind == "punct"
            and tokens[j].text == separator
            and tokens[j + 1].kind == "name"
        ):
            parts.append(tokens[j + 1].text)
            j += 2
        prev = tokens[i - 1] if i > 0 else None
        member = prev is not None and prev.kind == "punct" and prev.text in (".", "->", "::")
        global_scope = (
            member
            and prev is not None
            and prev.text == "::"
            and (i < 2 or tokens[i - 2].kind != "name")
        )
        yield Chain(tuple(parts), tok.start, tokens[j - 1].end, i, j, member and not global_scope)
        i = j


def archive_names(tokens: list[Token]) -> tuple[str, ...]:
    """Base names of the TorchScript archives a file names in its string literals."""
    names = {posixpath.basename(t.text.strip()) for t in tokens if t.kind == "string"}
    return tuple(sorted(n for n in names if n.lower().endswith(ARCHIVE_SUFFIXES)))


# --------------------------------------------------------------------------- C++


@dataclass(frozen=True)
class CppUse:
    """A TorchScript runtime use in C/C++/Objective-C++: an include or a torch::jit name."""

    symbol: str
    start: int
    end: int
    what: str  # "include" | "name"


# Last parts of torch::jit names, for the message and for the Python link (a load names the
# archive that must change with its writer).
LOADERS = frozenset({"load", "_load_for_mobile", "import_ir_module", "_load_for_lite_interpreter"})
TYPES = frozenset({"Module", "Method", "CompilationUnit", "Object"})
VALUES = frozenset({"IValue", "Stack", "GenericDict", "GenericList"})


def describe_use(symbol: str, what: str) -> str:
    """The head of a C++/Objective-C++ finding: what the runtime use is."""
    if what == "include":
        return f"including `<{symbol}>` pulls in the TorchScript runtime"
    last = symbol.rsplit("::", 1)[-1]
    if last in LOADERS:
        return f"`{symbol}` loads a TorchScript archive"
    if last in TYPES:
        return f"`{symbol}` is a TorchScript module type"
    if last in VALUES:
        return f"`{symbol}` is a TorchScript value (ExecuTorch passes a list of `EValue`s)"
    return (
        f"`{symbol}` is a TorchScript runtime setting or pass, with no counterpart in ExecuTorch "
        "or AOTInductor: drop it when the loader moves"
    )


@functools.lru_cache(maxsize=1)
def unqualified_names() -> frozenset[str]:
    """Names of the runtime that count unqualified after `using namespace torch::jit;`
    (MIG401's rule data)."""
    from migrate.registry import rule_holding

    rule = rule_holding("unqualified_names")
    names = rule.extra.get("unqualified_names") if rule else None
    return frozenset(str(n) for n in names or ())


# Headers of the TorchScript runtime: torch/script.h and everything under torch/csrc/jit.
JIT_HEADER = re.compile(r"^(?:torch/script\.h|torch/jit\.h|torch/csrc/jit/.+)$")
# The iOS pods' umbrella headers.
POD_HEADER = re.compile(r"^(?:LibTorch(?:-Lite)?(?:-Nightly)?|LibTorch_Lite)/.+$")


def declared_namespaces(
    tokens: list[Token],
) -> tuple[set[tuple[str, ...]], dict[str, tuple[str, ...]]]:
    """`using namespace X;` targets and `namespace a = X;` / `using X::y;` names."""
    used: set[tuple[str, ...]] = set()
    aliases: dict[str, tuple[str, ...]] = {}
    for k, tok in enumerate(tokens):
        if tok.kind != "name" or tok.text not in ("using", "namespace"):
            continue
        nxt = tokens[k + 1] if k + 1 < len(tokens) else None
        if nxt is None:
            continue
        if tok.text == "using" and nxt.kind == "name" and nxt.text == "namespace":
            chain = next(chains(tokens[k + 2 : k + 40], "::"), None)
            if chain is not None:
                used.add(chain.parts)
        elif tok.text == "using" and nxt.kind in ("name", "punct"):
            start = k + 2 if nxt.text == "::" else k + 1
            chain = next(chains(tokens[start : start + 40], "::"), None)
            if chain is not None and len(chain.parts) > 1:
                aliases[chain.parts[-1]] = chain.parts
        elif tok.text == "namespace" and nxt.kind == "name":
            if k + 2 < len(tokens) and tokens[k + 2].text == "=":
                chain = next(chains(tokens[k + 3 : k + 40], "::"), None)
                if chain is not None:
                    aliases[nxt.text] = chain.parts
    return used, aliases


def _resolve(
    parts: tuple[str, ...],
    used: set[tuple[str, ...]],
    aliases: dict[str, tuple[str, ...]],
    known: frozenset[str],
) -> tuple[str, ...]:
    """The torch::jit spelling an unqualified chain stands for, or the chain itself. Through
    a using-directive only names the runtime really has (`known`) resolve: `int x;` under
    `using namespace torch::jit;` is not `torch::jit::int`."""
    if parts[0] in aliases:
        return aliases[parts[0]] + parts[1:]
    for scope in sorted(used, key=len, reverse=True):
        full = scope + parts
        if full[:2] != ("torch", "jit") or scope[:1] != ("torch",):
            continue
        if full[2] in known:
            return full
    return parts


# Declarations that introduce names rather than use them (`using namespace torch::jit;`).
_DECLARATION_WORDS = frozenset({"using", "namespace"})


def cpp_uses(tokens: list[Token], known: frozenset[str]) -> list[CppUse]:
    """Includes of the TorchScript runtime and every `torch::jit::` name (also through
    `using namespace torch::jit;`, `using torch::jit::load;` or a namespace alias)."""
    uses = []
    for tok in tokens:
        if tok.kind == "include" and (JIT_HEADER.match(tok.text) or POD_HEADER.match(tok.text)):
            uses.append(CppUse(tok.text, tok.start, tok.end, "include"))
    used, aliases = declared_namespaces(tokens)
    for chain in chains(tokens, "::"):
        if chain.member:
            continue
        before = tokens[chain.index - 1] if chain.index else None
        if before is not None and before.kind == "name" and before.text in _DECLARATION_WORDS:
            continue
        if before is not None and before.text == "::" and chain.index >= 2:
            before = tokens[chain.index - 2]
            if before.kind == "name" and before.text in _DECLARATION_WORDS:
                continue
        resolved = chain.parts
        if chain.parts[0] != "torch":
            resolved = _resolve(chain.parts, used, aliases, known)
            if resolved == chain.parts:
                continue
            # An unqualified name only counts where it is used (a call, a type), not where a
            # user's own function of that name is declared after a using-directive.
            if len(chain.parts) == 1 and chain.parts[0] not in aliases:
                follow = tokens[chain.after] if chain.after < len(tokens) else None
                if (
                    follow is None
                    or follow.text not in ("(", "<", "{")
                    and not _is_type_use(tokens, chain)
                ):
                    continue
        if len(resolved) < 3 or resolved[:2] != ("torch", "jit"):
            continue
        uses.append(CppUse("::".join(resolved), chain.start, chain.end, "name"))
    uses.sort(key=lambda u: u.start)
    return uses


def _is_type_use(tokens: list[Token], chain: Chain) -> bool:
    """`Module m;`, `Module& m`, `const Module* m`: a name followed by a declarator."""
    follow = tokens[chain.after] if chain.after < len(tokens) else None
    return follow is not None and (follow.kind == "name" or follow.text in ("&", "*"))


# --------------------------------------------------------------------------- base check


@functools.lru_cache(maxsize=8)
def cached_tokens(text: str, lang: str) -> list[Token]:
    """Tokens of a file, shared by the checks that read it (C++ and iOS both read `.h`)."""
    return tokenize(text, lang)


def is_objc(path: PurePosixPath, tokens: list[Token]) -> bool:
    """Objective-C(++) sources and headers (`#import`, `@interface`, a LibTorch pod header)."""
    if path.name.lower().endswith(OBJC_SUFFIXES):
        return True
    for k, tok in enumerate(tokens):
        if tok.kind == "include" and (
            POD_HEADER.match(tok.text) or tok.text.startswith(("Foundation/", "UIKit/"))
        ):
            return True
        if (
            tok.kind == "name"
            and tok.text in ("interface", "implementation", "protocol")
            and k
            and tokens[k - 1].text == "@"
        ):
            return True
    return False
