"""MIG304: CUDA 12.8 container images: `nvidia/cuda:12.8.*` and `pytorch/pytorch:*cuda12.8*`."""

from __future__ import annotations

import re

from migrate.checks import _cuda
from migrate.checks.base import FileContext

NVIDIA = re.compile(
    r"(?<![\w./-])(?P<repo>(?:(?:docker\.io|nvcr\.io)/)?nvidia/cuda):(?P<ver>12\.8(?:\.\d+)?)"
    r"(?P<rest>-[\w.-]*[\w])?(?P<digest>@sha256:[0-9a-f]+)?"
)
PYTORCH = re.compile(
    r"(?<![\w./-])(?P<repo>(?:docker\.io/)?pytorch/pytorch):(?P<tag>[\w.-]*cuda12\.8[\w.-]*[\w])"
)


class CudaBaseImage(_cuda.CudaTextCheck):
    code = "MIG304"
    prefilter = r"12\.8"
    kinds = _cuda.PIP_KINDS | {_cuda.PYTHON}

    def scan(self, ctx: FileContext, code: str, kind: str) -> None:
        known = _cuda.known_images(self.target)
        new_ver = f"{self.target}.0"
        for m in NVIDIA.finditer(code):
            image = m.group()
            rest = (m.group("rest") or "")[1:]
            symbol = "nvidia/cuda"
            if m.group("digest"):
                self.report(
                    ctx,
                    m.start(),
                    m.end(),
                    f"image `{image}` is pinned to a CUDA 12.8 digest",
                    symbol=symbol,
                    reason=f"pick the CUDA {self.target} tag and its digest by hand",
                )
            elif rest in known:
                self.report(
                    ctx,
                    m.start("ver"),
                    m.end("ver"),
                    f"base image `{image}` is CUDA 12.8; use `{m.group('repo')}:{new_ver}-{rest}`",
                    symbol=symbol,
                    replacement=new_ver,
                )
            else:
                self.report(
                    ctx,
                    m.start(),
                    m.end(),
                    f"base image `{image}` is CUDA 12.8",
                    symbol=symbol,
                    reason=f"the tool does not know a `{new_ver}-{rest or '...'}` tag; pick a "
                    f"CUDA {self.target} image by hand (known ones: `migrate explain MIG304`)",
                )
        for m in PYTORCH.finditer(code):
            image = m.group()
            self.report(
                ctx,
                m.start(),
                m.end(),
                f"image `{image}` ships CUDA 12.8 PyTorch",
                symbol="pytorch/pytorch",
                reason=f"pick a `pytorch/pytorch:<torch>-cuda{self.target}-cudnn9-<runtime|devel>` "
                f"tag by hand (the torch release must have CUDA {self.target} builds)",
            )
