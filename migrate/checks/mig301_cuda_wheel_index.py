"""MIG301: pip / uv / poetry / pixi wheel indexes that point at CUDA 12.8 (`.../whl/cu128`)."""

from __future__ import annotations

import re

from migrate.checks import _cuda
from migrate.checks.base import FileContext

URL = re.compile(r"https?://[^\s\"'<>\]\)}`,;]+")
PYTORCH_INDEX = re.compile(
    r"^https?://download(?:-r2)?\.pytorch\.org/whl/(?:(?:nightly|test)/)?(?P<tag>cu128)(?=/|$)"
)
CU128 = re.compile(r"cu128(?!\d)")


class CudaWheelIndex(_cuda.CudaTextCheck):
    code = "MIG301"
    prefilter = r"cu128"
    kinds = _cuda.PIP_KINDS | {_cuda.PYTHON}

    def scan(self, ctx: FileContext, code: str, kind: str) -> None:
        pin = _cuda.torch_pin_problem(code, self.target)
        for m in URL.finditer(code):
            url = m.group()
            hit = CU128.search(url)
            if not hit:
                continue
            start = m.start() + hit.start()
            end = start + len("cu128")
            official = PYTORCH_INDEX.match(url)
            if official and ".whl" not in url[official.end() :]:
                self.report(
                    ctx,
                    start,
                    end,
                    f"PyTorch wheel index `{url}` serves CUDA 12.8 wheels; use `{self.tag}`",
                    symbol="download.pytorch.org/whl/cu128",
                    replacement=self.tag,
                    reason=pin,
                )
            elif official:
                self.report(
                    ctx,
                    m.start(),
                    m.end(),
                    "direct link to a CUDA 12.8 wheel file",
                    symbol="download.pytorch.org/whl/cu128",
                    reason=f"pick the {self.tag} wheel for your torch and Python versions "
                    f"(or install from https://download.pytorch.org/whl/{self.tag})",
                )
            else:
                self.report(
                    ctx,
                    m.start(),
                    m.end(),
                    f"wheel index or link `{url}` is built for CUDA 12.8",
                    symbol="cu128-url",
                    reason=f"not a PyTorch index: check that it publishes {self.tag} builds "
                    "and change the URL by hand",
                )
        if kind == _cuda.TOML:
            self._index_names(ctx, code, pin)

    def _index_names(self, ctx: FileContext, code: str, pin: str) -> None:
        """uv index / poetry source names such as `pytorch-cu128`, renamed with their URL
        wherever the file quotes them (`[tool.uv.sources]`, `source = ...`)."""
        for name in sorted(_cuda.index_names(code)):
            new = CU128.sub(self.tag, name)
            quoted = re.compile(r"([\"'])" + re.escape(name) + r"\1")
            for m in quoted.finditer(code):
                self.report(
                    ctx,
                    m.start() + 1,
                    m.end() - 1,
                    f"index name `{name}` names the CUDA 12.8 index; rename it `{new}` "
                    "with its URL",
                    symbol="cu128-index-name",
                    replacement=new,
                    reason=pin,
                )
