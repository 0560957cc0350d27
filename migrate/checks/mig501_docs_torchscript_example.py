"""MIG501: TorchScript in the Python code examples of Markdown and reStructuredText files.

No Markdown or reST parser: the blocks are found line by line (fences, code directives, `::`
literal blocks, `>>>` doctest lines), and the code in them is read with a small tokenizer
that skips comments and string literals. Findings are placed at the construct's own line and
column in the document.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import PurePosixPath

from migrate.checks.base import FileContext, TextCheck, is_suppressed

DOC_SUFFIXES = (".md", ".markdown", ".rst")
PYTHON_LANGS = frozenset({"python", "py", "python3", "py3", "pycon", "ipython", "ipython3"})
# reST directives whose body is code; `doctest` bodies are `>>>` sessions.
CODE_DIRECTIVES = frozenset({"code-block", "code", "sourcecode", "testcode", "testsetup"})

# Any indent: a fence in a list item is indented like the item's text.
FENCE = re.compile(r"(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>.*)")
DIRECTIVE = re.compile(r"(?P<indent>[ \t]*)\.\.[ \t]+(?P<name>[\w-]+)::[ \t]*(?P<arg>\S*)")
PROMPT = re.compile(r"(?P<indent>[ \t]*)(?:>>>|\.\.\.)(?: |$)")
LANG = re.compile(r"[{.\s]*(?P<lang>[\w+-]*)")

# Code tokens: comments and string literals are skipped, dotted names kept (`torch.jit.x`
# also spelled `torch . jit . x`).
_CODE = re.compile(
    r"(?P<comment>\#[^\n]*)"
    r"|(?P<string>[rRbBuUfF]{0,2}(?:'''.*?(?:'''|\Z)|\"\"\".*?(?:\"\"\"|\Z)"
    r"|'(?:[^'\\\n]|\\.)*'?|\"(?:[^\"\\\n]|\\.)*\"?))"
    r"|(?P<at>@[ \t]*)?(?P<chain>[A-Za-z_]\w*(?:[ \t]*\.[ \t]*[A-Za-z_]\w*)*)",
    re.S,
)
# The words every reported name holds: the file prefilter, and the test a block passes before
# its code is tokenized.
WORDS = r"jit|_lite_interpreter|optimize_for_mobile"
TRIGGER = re.compile(WORDS)
_PART = re.compile(r"[A-Za-z_]\w*")

CAPTURE = "show `ep = torch.export.export(model, (x,))` (`ep.module()` runs it)"
RECIPES = {
    "script": CAPTURE,
    "trace": CAPTURE,
    "trace_module": CAPTURE,
    "save": 'show `torch.export.save(ep, "model.pt2")`',
    "load": 'show `torch.export.load("model.pt2").module()`',
    "freeze": "drop it: an exported program needs no freezing",
    "optimize_for_inference": "drop it, or show `torch.compile(model)` for speed",
}
LITE = {
    "_save_for_lite_interpreter": "show an ExecuTorch program: "
    "`to_edge_transform_and_lower(ep).to_executorch()`, its `.buffer` written to a `.pte`",
    "optimize_for_mobile": "show an ExecuTorch program: "
    "`to_edge_transform_and_lower(ep, partitioner=[XnnpackPartitioner()]).to_executorch()`",
    "_load_for_lite_interpreter": "load the `.pte` with ExecuTorch's runtime "
    '(`executorch.runtime.Runtime.get().load_program("model.pte")`)',
}
HEAD = "code example shows TorchScript"


@dataclass(frozen=True, slots=True)
class CodeLine:
    line: int  # 1-based line of the document
    col: int  # where the code starts on it (after a `>>> ` prompt, say)
    text: str  # the whole line


@dataclass(frozen=True, slots=True)
class Block:
    opener: int  # 1-based line of the fence, directive or first doctest line
    lines: tuple[CodeLine, ...]


class DocsTorchscriptExample(TextCheck):
    code = "MIG501"
    prefilter = WORDS

    def applies_to(self, path: PurePosixPath) -> bool:
        return path.name.lower().endswith(DOC_SUFFIXES)

    def check(self, ctx: FileContext) -> None:
        lines = [line.rstrip("\r\n") for line in ctx.index.lines]
        rst = ctx.posix.name.lower().endswith(".rst")
        for block in rst_blocks(lines) if rst else markdown_blocks(lines):
            if _silenced(lines, block.opener, self.code):
                continue
            for found in constructs(block):
                self._report(ctx, *found)

    def _report(self, ctx: FileContext, line: int, col: int, length: int, name: str, at: bool):
        start = ctx.index.offset(line, col)
        last = name.rsplit(".", 1)[-1]
        if at and last == "script":
            advice = "show the plain function (or `@torch.compile` where it was for speed)"
            shown = f"@{name}"
        else:
            advice = LITE.get(last) or RECIPES.get(last)
            shown = name
        if advice is None:
            advice = "TorchScript-only: drop it from the example"
        symbol = name if name.startswith("torch.") or last in LITE else f"torch.{name}"
        ctx.add(self.rule, start, start + length, f"{HEAD} (`{shown}`): {advice}", symbol=symbol)


def _silenced(lines: list[str], opener: int, code: str) -> bool:
    """A `<!-- migrate: ignore -->` / `.. migrate: ignore` on the last non-blank line before
    the block's opening line silences the whole block."""
    k = opener - 2
    while k >= 0 and not lines[k].strip():
        k -= 1
    return k >= 0 and is_suppressed(lines[k], code)


# --------------------------------------------------------------------------- blocks


def _doctest(lines: list[str], numbers: range) -> tuple[CodeLine, ...]:
    """The code of the `>>>` / `...` lines among `numbers` (0-based indexes)."""
    out = []
    for k in numbers:
        m = PROMPT.match(lines[k])
        if m:
            out.append(CodeLine(k + 1, m.end(), lines[k]))
    return tuple(out)


def _lang(info: str) -> str:
    m = LANG.match(info)
    return m.group("lang").lower() if m else ""


def _code(lines: list[str], numbers: range) -> tuple[CodeLine, ...]:
    """A block's lines as code, or its `>>>` lines when it is a doctest session."""
    first = next((lines[k] for k in numbers if lines[k].strip()), "")
    if PROMPT.match(first):
        return _doctest(lines, numbers)
    return tuple(CodeLine(k + 1, 0, lines[k]) for k in numbers)


def markdown_blocks(lines: list[str]) -> Iterator[Block]:
    """Python fences, the `>>>` lines of fences without a language, and doctest lines in
    the text outside fences."""
    k, n = 0, len(lines)
    while k < n:
        m = FENCE.fullmatch(lines[k])
        if m and not (m.group("fence")[0] == "`" and "`" in m.group("info")):
            fence = m.group("fence")
            close = re.compile(rf"[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*")
            end = next((j for j in range(k + 1, n) if close.fullmatch(lines[j])), n)
            lang, body = _lang(m.group("info")), range(k + 1, end)
            if lang in PYTHON_LANGS:
                yield Block(k + 1, _code(lines, body))
            elif not lang:
                yield Block(k + 1, _doctest(lines, body))
            k = end + 1
            continue
        if PROMPT.match(lines[k]) and lines[k].lstrip().startswith(">>>"):
            end = k
            while end < n and PROMPT.match(lines[end]):
                end += 1
            yield Block(k + 1, _doctest(lines, range(k, end)))
            k = end
            continue
        k += 1


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _body(lines: list[str], start: int, indent: int) -> int:
    """The end (exclusive) of an indented body starting at `start`: the first non-blank line
    indented no deeper than `indent`."""
    k = start
    while k < len(lines) and (not lines[k].strip() or _indent(lines[k]) > indent):
        k += 1
    while k > start and not lines[k - 1].strip():
        k -= 1
    return k


def rst_blocks(lines: list[str]) -> Iterator[Block]:
    """Code directives, `::` literal blocks (Python unless `.. highlight::` said otherwise)
    and doctest paragraphs."""
    k, n = 0, len(lines)
    literal_python = True
    while k < n:
        line = lines[k]
        d = DIRECTIVE.match(line)
        if d:
            name, arg = d.group("name"), d.group("arg").lower()
            if name == "highlight":
                literal_python = arg in PYTHON_LANGS
            elif name == "doctest" or name in CODE_DIRECTIVES:
                end = _body(lines, k + 1, _indent(line))
                # Options (`:linenos:`) come first, up to the blank line.
                start = k + 1
                while start < end and lines[start].strip().startswith(":"):
                    start += 1
                if name == "doctest":
                    yield Block(k + 1, _doctest(lines, range(start, end)))
                elif not arg or arg in PYTHON_LANGS:
                    yield Block(k + 1, _code(lines, range(start, end)))
                k = max(end, k + 1)
                continue
            # Other directives (`.. note::`) hold text that may hold code blocks: read on.
            k += 1
            continue
        if line.rstrip().endswith("::") and not line.lstrip().startswith(".."):
            end = _body(lines, k + 1, _indent(line))
            if literal_python and end > k + 1:
                yield Block(k + 1, _code(lines, range(k + 1, end)))
            k = max(end, k + 1)
            continue
        if line.lstrip().startswith(">>>"):
            end = k
            while end < n and lines[end].strip():
                end += 1
            yield Block(k + 1, _doctest(lines, range(k, end)))
            k = end
            continue
        k += 1


# --------------------------------------------------------------------------- constructs


def constructs(block: Block) -> Iterator[tuple[int, int, int, str, bool]]:
    """(line, column, length, dotted name, decorated) of each TorchScript name in a block's
    code, read as one text so that strings spanning lines are skipped whole."""
    text = "\n".join(c.text[c.col :] for c in block.lines)
    if not TRIGGER.search(text):  # most blocks: no tokenizing
        return
    starts, at = [], 0
    for c in block.lines:
        starts.append(at)
        at += len(c.text) - c.col + 1
    row = 0
    for m in _CODE.finditer(text):
        chain = m.group("chain")
        if chain is None or ("jit" not in chain and not any(n in chain for n in LITE)):
            continue
        parts = [(p.group(), p.start()) for p in _PART.finditer(chain)]
        found = _torchscript(parts)
        if found is None:
            continue
        first, last = found
        begin = m.start("chain") + parts[first][1]
        end = m.start("chain") + parts[last][1] + len(parts[last][0])
        while row + 1 < len(starts) and starts[row + 1] <= begin:
            row += 1
        code = block.lines[row]
        name = ".".join(p for p, _ in parts[first : last + 1])
        decorated = m.group("at") is not None and first == 0
        yield code.line, code.col + begin - starts[row], end - begin, name, decorated


def _torchscript(parts: list[tuple[str, int]]) -> tuple[int, int] | None:
    """The span (first, last part index) of the TorchScript name in a dotted chain."""
    names = [p for p, _ in parts]
    for k, name in enumerate(names):
        if name in LITE:
            return (k - 1 if k and names[k - 1] == "torch" else k), k
        if name != "jit":
            continue
        if k and names[k - 1] == "torch":
            return k - 1, (k + 1 if k + 1 < len(names) else k)
        if k == 0 and len(names) > 1 and names[1] in RECIPES:
            return 0, 1
    return None
