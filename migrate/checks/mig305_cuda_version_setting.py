"""MIG305: settings that name CUDA 12.8: `ENV CUDA_VERSION=12.8`, CI matrices and env,
conda/pixi `cuda-version=12.8`, `cu128` build tags."""

from __future__ import annotations

import re
from dataclasses import dataclass

from migrate.checks import _cuda
from migrate.checks.base import FileContext

PURE_VERSION = re.compile(r"^(?P<pre>v|cuda-?|cu)?(?P<ver>12\.8(?:\.\d+|\.\*)?)$", re.I)
PURE_TAG = re.compile(r"^(?P<pre>cu|cuda)128$", re.I)
TOKEN = re.compile(
    r"(?<![\w.+%])(?:cu128|cuda-?12\.8(?:\.\d+)?|12\.8(?:\.\d+|\.\*)?)(?![\w]|\.\d)", re.I
)
# Tokens other MIG3xx rules report (images, paths, pins, URLs): not a setting's business.
OWNED = re.compile(r"nvidia/cuda:|pytorch/pytorch:|/cuda-12\.8|\+cu128|https?://")
SHELL_DEFAULT = re.compile(r"^\$\{\w+:?[-=](?P<val>[^}$]*)\}$")
CU128 = re.compile(r"(?<![\w+%])cu128(?!\d)", re.I)
URL = re.compile(r"https?://[^\s\"'<>\]\)}`,;]+")
CHANNEL = re.compile(r"(?<![\w])nvidia/label/cuda-(?P<ver>12\.8(?:\.\d+)?)(?![\w.])")

_VALUE = r"(?P<val>\"[^\"\n]*\"|'[^'\n]*'|[^\s;&|)\\\"']+)"
SH_ASSIGN = re.compile(
    r"(?:(?<=-D)|(?<![\w$/.-]))(?P<key>[A-Za-z_][A-Za-z0-9_]*)(?::\w+)?=" + _VALUE
)
DOCKER_LEGACY = re.compile(
    r"^[ \t]*(?:ENV|ARG|LABEL)[ \t]+(?P<key>\w+)[ \t]+(?P<val>[^\s=][^\r\n]*?)[ \t]*\r?$",
    re.I | re.M,
)
MAKE_ASSIGN = re.compile(
    r"^[ \t]*(?:export[ \t]+|override[ \t]+)?(?P<key>\w+)[ \t]*(?:\?=|:=|::=|\+=|=)[ \t]*"
    r"(?P<val>[^\r\n]*?)[ \t]*\r?$",
    re.M,
)
KEY_VALUE = re.compile(
    r"^[ \t]*(?P<key>[\w.-]+|\"[^\"\n]+\")[ \t]*[=:][ \t]*(?P<val>[^\r\n]*?)[ \t]*\r?$", re.M
)
CMAKE_SET = re.compile(r"set\(\s*(?P<key>\w+)\s+" + _VALUE, re.I)
CLI_FLAG = re.compile(r"--(?P<key>[\w-]*cuda[\w-]*)(?:=|[ \t]+)" + _VALUE, re.I)
CONDA_SPEC = re.compile(
    r"^(?:[\w./-]+::)?(?P<name>[A-Za-z0-9_.-]+)(?P<op>[ \t]*(?:==|[<>!~]?=|[<>]|[ \t])[ \t]*)(?P<ver>\S+?)"
    r"(?:=\S+)?[ \t]*\r?$"
)
NOT_VERSION_KEYS = ("arch", "home", "path", "dir", "root", "image", "url", "index", "driver")
LABEL_KEYS = frozenset(
    {"runs-on", "tags", "labels", "name", "stage", "group", "description", "title", "job"}
)


def cuda_key(key: str) -> bool:
    k = key.lower()
    if any(word in k for word in NOT_VERSION_KEYS):
        return False
    return "cuda" in k or k in ("cu", "nvcc", "cu_version", "cu_ver", "cuver")


@dataclass
class Setting:
    key: str
    start: int
    end: int
    group: int = 0


def _unquoted(m: re.Match, group: str = "val") -> tuple[int, int]:
    start, end = m.span(group)
    text = m.group(group)
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return start + 1, end - 1
    return start, end


class CudaVersionSetting(_cuda.CudaTextCheck):
    code = "MIG305"
    prefilter = r"12\.8|cu128|cuda128|CUDA128"
    kinds = frozenset(
        {_cuda.DOCKER, _cuda.YAML, _cuda.SHELL, _cuda.MAKE, _cuda.CMAKE, _cuda.TOML, _cuda.CFG}
    )

    def scan(self, ctx: FileContext, code: str, kind: str) -> None:
        conda = {k.lower(): v for k, v in _cuda.rule_data("conda_packages", self.code).items()}
        settings: dict[tuple[int, int], Setting] = {}

        def add(key: str, span: tuple[int, int], group: int = 0) -> None:
            if span[1] > span[0]:
                settings.setdefault(span, Setting(key, span[0], span[1], group))

        blocks: list[tuple[int, int]] = []
        if kind == _cuda.YAML:
            values, blocks = _cuda.yaml_values(code)
            for v in values:
                add(v.key, (v.start, v.end), v.group)
            if re.search(r"^dependencies[ \t]*:", code, re.M):
                for start, end in _cuda.conda_dependency_spans(code):
                    m = CONDA_SPEC.match(code[start:end])
                    if m and m.group("name").lower() in conda:
                        add(m.group("name"), (start + m.start("ver"), start + m.end("ver")))
        if kind == _cuda.DOCKER:
            for m in DOCKER_LEGACY.finditer(code):
                add(m.group("key"), _unquoted(m))
        if kind == _cuda.MAKE:
            for m in MAKE_ASSIGN.finditer(code):
                add(m.group("key"), _unquoted(m))
        if kind == _cuda.CMAKE:
            for m in CMAKE_SET.finditer(code):
                add(m.group("key"), _unquoted(m))
        if kind in (_cuda.TOML, _cuda.CFG):
            for m in KEY_VALUE.finditer(code):
                add(m.group("key").strip('"'), _unquoted(m))
        if kind != _cuda.TOML:
            for m in SH_ASSIGN.finditer(code):
                add(m.group("key"), _unquoted(m))
            for m in CLI_FLAG.finditer(code):
                add(m.group("key"), _unquoted(m))

        by_group: dict[int, list[str]] = {}
        for s in settings.values():
            if s.group:
                by_group.setdefault(s.group, []).append(code[s.start : s.end].strip())
        covered: list[tuple[int, int]] = []
        for s in sorted(settings.values(), key=lambda s: s.start):
            if self._setting(ctx, code, s, conda, by_group.get(s.group, []), kind):
                covered.append((s.start, s.end))

        for m in CHANNEL.finditer(code):
            new = f"{self.target}.0"
            self.report(
                ctx,
                m.start("ver"),
                m.end("ver"),
                f"conda channel `{m.group()}` holds CUDA 12.8 packages; use "
                f"`nvidia/label/cuda-{new}`",
                symbol="nvidia/label/cuda-12.8",
                replacement=new,
            )
            covered.append(m.span())
        self._leftover_tags(ctx, code, kind, covered)

    def _setting(
        self, ctx: FileContext, code: str, s: Setting, conda: dict, siblings: list[str], kind: str
    ) -> bool:
        value = code[s.start : s.end]
        default = SHELL_DEFAULT.match(value)
        if default:  # ${CUDA_VERSION:-12.8}: the default is the setting
            s = Setting(
                s.key, s.start + default.start("val"), s.start + default.end("val"), s.group
            )
            value = default.group("val")
        stripped = value.strip()
        lead = len(value) - len(value.lstrip())
        start, end = s.start + lead, s.start + lead + len(stripped)
        key_lower = s.key.lower()
        is_cuda = cuda_key(s.key) or key_lower in conda
        version = PURE_VERSION.match(stripped)
        tag = PURE_TAG.match(stripped)
        if not is_cuda and not (tag and tag.group("pre").lower() == "cu"):
            return False
        if not (version or tag):
            if is_cuda and TOKEN.search(stripped) and not OWNED.search(stripped):
                self.report(
                    ctx,
                    start,
                    end,
                    f"`{s.key}` is set to `{stripped}`, which names CUDA 12.8",
                    symbol=s.key,
                    reason="the value mixes CUDA 12.8 with other text; change it by hand",
                )
                return True
            return False
        if version:
            old = version.group("ver")
            new = _cuda.new_version(old, self.target)
            new_value = (version.group("pre") or "") + new
            span = (start + version.start("ver"), start + version.end("ver"))
            replacement = new
        else:
            pre = tag.group("pre")
            new_value = f"{pre}{self.tag[2:]}"
            span = (start, end)
            replacement = new_value
        message = f"`{s.key}` is set to `{stripped}` (CUDA 12.8); use `{new_value}`"
        reason = ""
        if key_lower in conda and conda[key_lower] != "auto":
            reason = str(conda[key_lower])
        elif not is_cuda and kind == _cuda.YAML and key_lower in LABEL_KEYS:
            reason = f"`{s.key}` is a label, not a CUDA setting; rename it by hand if it selects the CUDA 12.8 build"
        elif kind == _cuda.DOCKER and version:
            reason = self._image_use(code, s.key, new)
        elif tag and tag.group("pre").lower() == "cu":
            # A wheel tag (`cu128` in a matrix that builds the index URL): torch pinned in
            # the same file must have wheels for the new tag.
            reason = _cuda.torch_pin_problem(code, self.target)
        if not reason and new_value in siblings:
            reason = f"`{new_value}` is already in this list: drop `{stripped}` (or keep it for pre-Turing GPUs) by hand"
        self.report(ctx, *span, message, symbol=s.key, replacement=replacement, reason=reason)
        return True

    def _image_use(self, code: str, key: str, new: str) -> str:
        """An ARG that a `FROM nvidia/cuda:${KEY}-...` line uses must yield a known tag."""
        known = _cuda.known_images(self.target)
        uses = re.finditer(
            r"nvidia/cuda:\$\{?" + re.escape(key) + r"\}?(?:-(?P<rest>[\w.-]*\w))?", code
        )
        for m in uses:
            rest = m.group("rest") or ""
            if rest not in known:
                return (
                    f"`nvidia/cuda:{new}-{rest}` is not an image the tool knows; pick the "
                    "version and tag together by hand"
                )
        return ""

    def _leftover_tags(
        self, ctx: FileContext, code: str, kind: str, covered: list[tuple[int, int]]
    ) -> None:
        """`cu128` anywhere else (a variant name, a script argument): assisted."""
        skip = list(covered)
        skip += [m.span() for m in URL.finditer(code)]
        if kind == _cuda.TOML:
            for name in _cuda.index_names(code):
                skip += [m.span() for m in re.finditer(re.escape(name), code)]
        for m in CU128.finditer(code):
            if any(a <= m.start() < b for a, b in skip):
                continue
            self.report(
                ctx,
                m.start(),
                m.end(),
                "`cu128` names the CUDA 12.8 build",
                symbol="cu128",
                reason=f"not a setting the tool knows; change it to `{self.tag}` by hand if it "
                "selects the CUDA build",
            )
