"""MIG307: GPU architecture lists with pre-Turing entries (sm_50..sm_72), which CUDA 13
cannot build: TORCH_CUDA_ARCH_LIST, CMAKE_CUDA_ARCHITECTURES, nvcc -gencode / -arch."""

from __future__ import annotations

import re

from migrate.checks import _cuda
from migrate.checks.base import FileContext

_VALUE = r"(?P<val>\"[^\"\n]*\"|'[^'\n]*'|[^\s)\\\"']+)"
ASSIGN = re.compile(
    r"(?:-D)?(?P<key>\b[A-Za-z_]*(?:CUDA_ARCH_LIST|CUDA_ARCHITECTURES|CUDAARCHS|CUDA_ARCHS))\b"
    r"(?::\w+)?[\"']?(?:\s*(?:\?=|:=|\+=|=|:)\s*|\s+|\]\s*=\s*)" + _VALUE,
    re.I,
)
CMAKE_SET = re.compile(
    r"set\(\s*(?P<key>\w*CUDA_ARCHITECTURES|CUDAARCHS)\s+(?P<val>[^)\n]*?)\s*(?:CACHE\b[^)]*)?\)",
    re.I,
)
CMAKE_PROPERTY = re.compile(r"(?<![\w])(?P<key>CUDA_ARCHITECTURES)\s+(?P<val>\"[^\"\n]*\"|[^)\n]+)")
ARCH_NAMES = {"maxwell": "Maxwell", "pascal": "Pascal", "volta": "Volta"}
GENCODE = re.compile(
    r"(?:-gencode|--generate-code)[= ]+\"?arch=compute_(?P<arch>\d+)[a-z]?,\s*code=(?P<code>\[[^\]]*\]|[\w,]+)\"?"
)
FLAG = re.compile(
    r"(?:--gpu-architecture|--gpu-code|--cuda-gpu-arch|--offload-arch|-arch|-code)[= ]+"
    r"(?P<arch>(?:sm|compute)_(?P<num>\d+)[a-z]?)"
)
DOTTED = re.compile(r"(?<![\w.])(?P<arch>\d{1,2})\.(?P<minor>\d)(?:\+PTX)?(?![\w.])", re.I)
NUMBER = re.compile(r"(?<![\w.])(?P<arch>\d{2,3})(?:-real|-virtual)?(?![\w.])")


def _pre_turing(value: str, dotted: bool) -> tuple[list[str], list[str]]:
    """(pre-Turing entries, remaining entries) of an arch list value."""
    old, kept = [], []
    for entry in re.split(r"[\s;,]+", value.strip().strip("\"'")):
        if not entry:
            continue
        if entry.lower() in ARCH_NAMES:
            old.append(entry)
            continue
        if dotted:
            m = DOTTED.fullmatch(entry)
            arch = f"{m.group('arch')}{m.group('minor')}" if m else ""
        else:
            m = NUMBER.fullmatch(entry)
            arch = m.group("arch") if m else ""
        (old if arch in _cuda.PRE_TURING else kept).append(entry)
    return old, kept


class PreTuringArchList(_cuda.CudaTextCheck):
    code = "MIG307"
    prefilter = r"sm_[5-7]|compute_[5-7]|CUDA_?ARCH|cuda_arch"
    kinds = _cuda.PIP_KINDS | {_cuda.PYTHON, _cuda.CMAKE}

    def _assisted(
        self,
        ctx: FileContext,
        start: int,
        end: int,
        what: str,
        old: list[str],
        kept: list[str],
        sep: str,
    ) -> None:
        suggestion = sep.join(kept)
        self.report(
            ctx,
            start,
            end,
            f"{what} includes pre-Turing GPUs ({', '.join(old)}), which CUDA 13 cannot build",
            symbol="pre-Turing arch",
            reason=(
                f"drop them to build with CUDA 13 (`{suggestion}`)"
                if kept
                else "nothing in it builds with CUDA 13: choose Turing or newer (sm_75+)"
            )
            + ", or keep this build on cu128 for those GPUs",
        )

    def scan(self, ctx: FileContext, code: str, kind: str) -> None:
        covered: list[tuple[int, int]] = []
        patterns = (CMAKE_SET, CMAKE_PROPERTY, ASSIGN) if kind == _cuda.CMAKE else (ASSIGN,)
        for pattern in patterns:
            for m in pattern.finditer(code):
                start, end = m.span("val")
                if any(a <= start < b or a <= m.start("key") < b for a, b in covered):
                    continue
                value = m.group("val")
                dotted = "TORCH" in m.group("key").upper() or "." in value
                old, kept = _pre_turing(value, dotted)
                covered.append((m.start(), end))
                if old:
                    sep = ";" if ";" in value else ("," if "," in value else " ")
                    self._assisted(ctx, start, end, f"`{m.group('key')}`", old, kept, sep)
        for m in GENCODE.finditer(code):
            if m.group("arch") in _cuda.PRE_TURING:
                self.report(
                    ctx,
                    m.start(),
                    m.end(),
                    f"`{m.group()}` targets a pre-Turing GPU (sm_{m.group('arch')}), which CUDA 13 "
                    "cannot build",
                    symbol="pre-Turing arch",
                    reason="remove this flag to build with CUDA 13, or keep this build on cu128 "
                    "for that GPU",
                )
                covered.append(m.span())
        for m in FLAG.finditer(code):
            if m.group("num") in _cuda.PRE_TURING and not any(
                a <= m.start() < b for a, b in covered
            ):
                self.report(
                    ctx,
                    m.start(),
                    m.end(),
                    f"`{m.group()}` targets a pre-Turing GPU, which CUDA 13 cannot build",
                    symbol="pre-Turing arch",
                    reason="use sm_75 or newer to build with CUDA 13, or keep this build on cu128 "
                    "for that GPU",
                )
