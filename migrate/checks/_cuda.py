"""Shared pieces of the MIG3xx checks: which file is which, what is code (not a comment),
the CUDA 13 target spellings, and the note every CUDA finding carries."""

from __future__ import annotations

import functools
import io
import re
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import ClassVar

from migrate.checks.base import Edit, FileContext, TextCheck
from migrate.findings import Finding, FixKind

DEFAULT_TARGET = "13.0"
TAGS = {"13.0": "cu130", "13.2": "cu132"}

# What every finding says CUDA 13 requires (the issue: driver floor, pre-Turing GPUs).
NOTE = "CUDA 13 needs NVIDIA driver 580+ on Linux; pre-Turing GPUs (sm_50-sm_72) stay on cu128"

# Pre-Turing compute capabilities: Maxwell 5.x, Pascal 6.x, Volta 7.0/7.2 (Xavier).
PRE_TURING = frozenset({"50", "52", "53", "60", "61", "62", "70", "72"})

# File kinds (see file_kind); every CUDA check names the kinds it reads.
REQUIREMENTS = "requirements"
TOML = "toml"
CFG = "cfg"
SETUP_PY = "setup_py"
PYTHON = "python"
DOCKER = "docker"
YAML = "yaml"
SHELL = "shell"
MAKE = "make"
CMAKE = "cmake"
PIP_KINDS = frozenset({REQUIREMENTS, TOML, CFG, SETUP_PY, DOCKER, YAML, SHELL, MAKE})


def file_kind(path: PurePosixPath) -> str | None:
    """The kind of file by its name, or None for files no CUDA check reads."""
    lower = path.name.lower()
    if lower.endswith((".py", ".pyi")):
        return SETUP_PY if lower == "setup.py" else PYTHON
    if lower == "cmakelists.txt" or lower.endswith(".cmake"):
        return CMAKE
    if lower in ("makefile", "gnumakefile", "makefile.in") or lower.endswith(".mk"):
        return MAKE
    if lower.endswith(".txt") and (
        lower.startswith(("requirements", "constraints"))
        or lower.endswith(("-requirements.txt", "_requirements.txt"))
        or path.parent.name.lower() == "requirements"
    ):
        return REQUIREMENTS
    if lower.endswith(".in") and lower != "manifest.in":
        return REQUIREMENTS
    if lower in ("pyproject.toml", "pixi.toml"):
        return TOML
    if lower == "setup.cfg":
        return CFG
    if (
        lower in ("dockerfile", "containerfile")
        or lower.startswith(("dockerfile.", "containerfile."))
        or lower.endswith((".dockerfile", ".containerfile"))
    ):
        return DOCKER
    if lower.endswith((".yml", ".yaml")):
        return YAML
    if lower.endswith((".sh", ".bash")):
        return SHELL
    return None


def target_of(options: dict) -> str:
    target = str(options.get("cuda") or DEFAULT_TARGET)
    return target if target in TAGS else DEFAULT_TARGET


def new_version(old: str, target: str) -> str:
    """12.8 -> 13.0, 12.8.1 -> 13.0.0, 12.8.* -> 13.0.* (patch levels restart at 0)."""
    parts = old.split(".")
    if len(parts) <= 2:
        return target
    tail = parts[2]
    return f"{target}.{'*' if tail == '*' else '0'}"


def version_tuple(text: str) -> tuple[int, ...]:
    out = []
    for part in text.split("."):
        digits = re.match(r"\d+", part)
        if not digits:
            break
        out.append(int(digits.group()))
    return tuple(out)


# --------------------------------------------------------------------------- masking


def _mask(text: str, spans: list[tuple[int, int]]) -> str:
    """Replace the given spans with spaces (newlines kept): offsets stay the same."""
    if not spans:
        return text
    chars = list(text)
    for start, end in spans:
        for i in range(start, end):
            if chars[i] not in "\r\n":
                chars[i] = " "
    return "".join(chars)


def _hash_comments(text: str, anywhere: bool = False) -> list[tuple[int, int]]:
    """`#` comments: at a line start or after whitespace (a URL's #fragment is not one),
    outside quotes."""
    spans = []
    offset = 0
    for line in text.splitlines(keepends=True):
        quote = ""
        for i, ch in enumerate(line):
            if quote:
                if ch == quote:
                    quote = ""
            elif ch in "\"'":
                quote = ch
            elif ch == "#" and (anywhere or i == 0 or line[i - 1] in " \t"):
                spans.append((offset + i, offset + len(line.rstrip("\r\n"))))
                break
        offset += len(line)
    return spans


def _python_code_spans(text: str) -> list[tuple[int, int]]:
    """Everything in a Python file except its string literals (CUDA values live in strings)."""
    starts = [0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))

    def offset(pos: tuple[int, int]) -> int:
        row, col = pos
        return starts[row - 1] + col if row - 1 < len(starts) else len(text)

    keep = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.STRING or tok.type in _FSTRING_PARTS:
                keep.append((offset(tok.start), offset(tok.end)))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return []
    spans = []
    last = 0
    for start, end in keep:
        if start > last:
            spans.append((last, start))
        last = max(last, end)
    spans.append((last, len(text)))
    return spans


_FSTRING_PARTS = {
    getattr(tokenize, name) for name in ("FSTRING_MIDDLE",) if hasattr(tokenize, name)
}


@functools.lru_cache(maxsize=8)
def code_text(text: str, kind: str) -> str:
    """The file's text with comments (for Python: all but string literals) blanked out.

    Cached: every CUDA check of a file asks for the same masked text."""
    if kind in (PYTHON, SETUP_PY):
        return _mask(text, _python_code_spans(text))
    return _mask(text, _hash_comments(text, anywhere=kind in (MAKE, CMAKE)))


# --------------------------------------------------------------------------- YAML lines


_YAML_KEY = re.compile(
    r"""^(?P<indent>[ ]*)(?P<dash>(?:-[ ]+)*)(?P<key>"[^"]*"|'[^']*'|[^\s#:'"\[\]{},&*!|>-][^:#]*?)[ ]*:(?:[ ]+|$)"""
)
_YAML_ITEM = re.compile(r"^(?P<indent>[ ]*)(?P<dash>(?:-[ ]+)+)")


@dataclass
class YamlValue:
    """One scalar of a YAML file: the key it belongs to and where it sits."""

    key: str  # the mapping key, or for a list item the key that holds the list
    start: int
    end: int
    text: str
    group: int  # values sharing a group are siblings in one list (matrix axes)
    line: int


def _scalar_spans(value: str, base: int) -> Iterator[tuple[int, int]]:
    """Scalars of a YAML value: a plain/quoted scalar or each item of a flow list."""
    stripped = value.strip()
    if not stripped or stripped[0] in "|>":
        return
    lead = len(value) - len(value.lstrip())
    # Anchors and tags come before the scalar: `&cuda "12.8"`, `!!str 12.8`.
    pos = lead
    while pos < len(value) and value[pos] in "&!":
        space = value.find(" ", pos)
        if space < 0:
            return
        pos = space + 1
        while pos < len(value) and value[pos] == " ":
            pos += 1
    body = value[pos:].rstrip()
    if body.startswith("["):
        inner_start = pos + 1
        depth_end = body.rfind("]")
        inner = body[1 : depth_end if depth_end > 0 else len(body)]
        cursor = 0
        for item in inner.split(","):
            item_lead = len(item) - len(item.lstrip())
            item_body = item.strip()
            if item_body:
                yield _unquote(base + inner_start + cursor + item_lead, item_body)
            cursor += len(item) + 1
        return
    if body.startswith("{"):
        return
    yield _unquote(base + pos, body)


def _unquote(start: int, body: str) -> tuple[int, int]:
    if len(body) >= 2 and body[0] == body[-1] and body[0] in "\"'":
        return start + 1, start + len(body) - 1
    return start, start + len(body)


def yaml_values(text: str) -> tuple[list[YamlValue], list[tuple[int, int]]]:
    """Scalars with the key that governs them, and the spans of block scalars (`run: |`)
    whose lines are shell or other text."""
    values: list[YamlValue] = []
    blocks: list[tuple[int, int]] = []
    stack: list[tuple[int, str, int]] = []  # (indent, key, group id)
    offset = 0
    group_counter = 0
    block_indent: int | None = None
    block_start = 0
    lines = text.splitlines(keepends=True)
    for number, raw in enumerate(lines, start=1):
        line = raw.rstrip("\r\n")
        stripped = line.strip()
        indent = len(line) - len(line.lstrip(" "))
        if block_indent is not None:
            if not stripped or indent > block_indent:
                offset += len(raw)
                continue
            blocks.append((block_start, offset))
            block_indent = None
        if not stripped or stripped.startswith("#") or stripped in ("---", "..."):
            offset += len(raw)
            continue
        code = line
        for start, _end in _hash_comments(line):
            code = line[:start]
            break
        m = _YAML_KEY.match(code)
        if m:
            key = m.group("key").strip().strip("\"'")
            key_indent = len(m.group("indent")) + len(m.group("dash"))
            while stack and stack[-1][0] >= key_indent:
                stack.pop()
            group_counter += 1
            stack.append((key_indent, key, group_counter))
            value = code[m.end() :]
            if value.strip()[:1] in ("|", ">"):
                block_indent = indent if not m.group("dash") else key_indent - 1
                block_indent = min(block_indent, key_indent)
                block_start = offset + len(raw)
            for start, end in _scalar_spans(value, offset + m.end()):
                values.append(YamlValue(key, start, end, text[start:end], group_counter, number))
        else:
            item = _YAML_ITEM.match(code)
            if item:
                item_indent = len(item.group("indent"))
                while stack and stack[-1][0] > item_indent:
                    stack.pop()
                if stack:
                    parent_key, group = stack[-1][1], stack[-1][2]
                    for start, end in _scalar_spans(code[item.end() :], offset + item.end()):
                        values.append(
                            YamlValue(parent_key, start, end, text[start:end], group, number)
                        )
        offset += len(raw)
    if block_indent is not None:
        blocks.append((block_start, offset))
    return values, blocks


def conda_dependency_spans(text: str) -> list[tuple[int, int]]:
    """Items of a top-level `dependencies:` list (a conda environment), outside pip."""
    spans = []
    offset = 0
    inside = False
    for raw in text.splitlines(keepends=True):
        line = raw.rstrip("\r\n")
        if re.match(r"^dependencies\s*:", line):
            inside = True
        elif line and not line[0].isspace() and not line.startswith(("-", "#")):
            inside = False
        elif inside:
            m = re.match(r"^(\s*)-\s+(?![\w-]+\s*:(?:\s|$))(\S.*)$", line)
            if m:
                spans.append((offset + m.start(2), offset + len(line)))
        offset += len(raw)
    return spans


# --------------------------------------------------------------------------- checks


class CudaTextCheck(TextCheck):
    """A MIG3xx check: picks files by kind and reports with the CUDA 13 note."""

    kinds: ClassVar[frozenset[str]] = frozenset()

    def applies_to(self, path: PurePosixPath) -> bool:
        return file_kind(path) in self.kinds

    @property
    def target(self) -> str:
        return target_of(self.options)

    @property
    def tag(self) -> str:
        return TAGS[self.target]

    def check(self, ctx: FileContext) -> None:
        kind = file_kind(ctx.posix)
        if kind is None:
            return
        self.scan(ctx, code_text(ctx.text, kind), kind)

    def scan(self, ctx: FileContext, code: str, kind: str) -> None:  # pragma: no cover
        raise NotImplementedError

    def report(
        self,
        ctx: FileContext,
        start: int,
        end: int,
        message: str,
        *,
        symbol: str,
        replacement: str | None = None,
        reason: str = "",
    ) -> Finding:
        """A finding with the CUDA 13 note. With a replacement it is auto (one edit of exactly
        this span); with a reason it is assisted and carries no edit."""
        if replacement is not None and not reason:
            return ctx.add(
                self.rule,
                start,
                end,
                f"{message}; {NOTE}",
                symbol=symbol,
                fix=FixKind.AUTO,
                edits=[Edit(start, end, replacement)],
            )
        text = f"{message}: {reason}; {NOTE}" if reason else f"{message}; {NOTE}"
        return ctx.add(self.rule, start, end, text, symbol=symbol, fix=FixKind.ASSISTED)


def in_spans(pos: int, spans: list[tuple[int, int]]) -> bool:
    return any(start <= pos < end for start, end in spans)


# --------------------------------------------------------------------------- rule data


def rule_data(key: str, code: str | None = None) -> dict:
    """A table kept in a rule's YAML (rules are data: versions and tags live there): the
    rule `code`'s, or that of the one rule holding a table of that name."""
    from migrate.registry import all_rules, rule_holding

    rule = all_rules().get(code) if code else rule_holding(key)
    return dict(rule.extra.get(key) or {}) if rule else {}


def minimum_versions(target: str) -> dict[str, str]:
    """First release of each package with wheels for the target (MIG302 data)."""
    return {k: str(v) for k, v in (rule_data("minimum_versions").get(target) or {}).items()}


def known_images(target: str) -> set[str]:
    """`<variant>-<os>` suffixes of nvidia/cuda tags published for the target (MIG304 data)."""
    return set(rule_data("nvidia_cuda_images").get(target) or ())


# `torch==2.7.1` and `torch==2.7.1+cu128` (a local version names the build, not the release).
TORCH_PIN = re.compile(
    r"(?<![\w.-])torch(?![\w-])\s*(?:\[[^\]]*\]\s*)?(?P<op>===?|<=|<|~=)\s*(?P<ver>\d+(?:\.\d+)*)"
    r"(?:\+[A-Za-z0-9.]+)?(?![\w.+])"
)


def torch_pin_problem(code: str, target: str) -> str:
    """Why a file's own `torch==X` pin rules out the target's wheels ("" when it does not)."""
    first = minimum_versions(target).get("torch")
    if not first:
        return ""
    for m in TORCH_PIN.finditer(code):
        ver = m.group("ver")
        if version_tuple(ver) < version_tuple(first) or (
            m.group("op") == "<" and version_tuple(ver) <= version_tuple(first)
        ):
            return (
                f"this file pins torch{m.group('op')}{ver}, which has no {TAGS[target]} wheels "
                f"(they start at torch {first}); raise the torch pin first"
            )
    return ""


INDEX_TABLE = re.compile(r"^[ \t]*\[\[[ \t]*tool\.(?:uv\.index|poetry\.source)[ \t]*\]\]", re.M)
_TABLE = re.compile(r"^[ \t]*\[", re.M)
_INDEX_NAME = re.compile(
    r"^[ \t]*name[ \t]*=[ \t]*([\"'])(?P<name>[^\"'\n]*cu128[^\"'\n]*)\1", re.M
)


def index_names(code: str) -> set[str]:
    """Names of uv indexes / poetry sources that mention cu128 (`pytorch-cu128`)."""
    names = set()
    for table in INDEX_TABLE.finditer(code):
        following = _TABLE.search(code, table.end())
        body_end = following.start() if following else len(code)
        for m in _INDEX_NAME.finditer(code, table.end(), body_end):
            names.add(m.group("name"))
    return names
