"""MIG302: `+cu128` local versions: `torch==2.9.1+cu128`, torchvision, torchaudio and friends."""

from __future__ import annotations

import re

from migrate.checks import _cuda
from migrate.checks.base import FileContext

LOCAL = re.compile(
    r"(?<![\w.])(?P<ver>\d+(?:\.\d+)+(?:(?:a|b|rc|\.post|\.dev)\d+)*)(?P<plus>\+|%2[Bb])cu128(?![\w])"
)
# What names the package, looking back from the version on the same line.
PIP_NAME = re.compile(r"(?P<name>[A-Za-z][A-Za-z0-9_.-]*)\s*(?:\[[^\]]*\]\s*)?===?\s*$")
TOML_NAME = re.compile(
    r"(?P<name>[A-Za-z][A-Za-z0-9_.-]*)[\"']?\s*=\s*(?:\{[^}]*version\s*=\s*)?[\"']=*\s*$"
)
WHEEL_NAME = re.compile(r"(?P<name>[A-Za-z][A-Za-z0-9_.]*)-$")
ENV_NAME = re.compile(r"(?P<name>[A-Za-z_][A-Za-z0-9_]*?)_?VER(?:SION)?\s*[:=]\s*[\"']?\s*$", re.I)
URL_BEFORE = re.compile(r"://\S*$")


def _package(prefix: str) -> tuple[str, str] | None:
    """(package, how it was named) from the text before a version, or None."""
    m = ENV_NAME.search(prefix)
    if m:
        key = m.group("name").lower().replace("pytorch", "torch")
        for package in ("torchvision", "torchaudio", "torch"):
            if package in key:
                return package, "variable"
    for pattern, how in ((PIP_NAME, "pin"), (TOML_NAME, "pin"), (WHEEL_NAME, "wheel")):
        m = pattern.search(prefix)
        if m:
            return m.group("name").lower().replace("_", "-"), how
    return None


class CudaLocalVersionPin(_cuda.CudaTextCheck):
    code = "MIG302"
    prefilter = r"cu128"
    kinds = _cuda.PIP_KINDS | {_cuda.PYTHON}

    def scan(self, ctx: FileContext, code: str, kind: str) -> None:
        minimums = _cuda.minimum_versions(self.target)
        for m in LOCAL.finditer(code):
            line_start = code.rfind("\n", 0, m.start()) + 1
            prefix = code[line_start : m.start()]
            if URL_BEFORE.search(prefix):
                continue  # part of a URL: MIG301 reports the link
            found = _package(prefix)
            ver = m.group("ver")
            start = m.start("plus")
            end = m.end()
            plus = m.group("plus")
            if found is None:
                self.report(
                    ctx,
                    m.start(),
                    end,
                    f"`{ver}+cu128` is a CUDA 12.8 build",
                    symbol="+cu128",
                    reason="cannot tell which package it pins; change it by hand",
                )
                continue
            package, how = found
            label = f"`{package}=={ver}+cu128`" if how != "wheel" else f"`{package}-{ver}+cu128`"
            if how == "wheel":
                self.report(
                    ctx,
                    m.start(),
                    end,
                    f"{label} names a CUDA 12.8 wheel file",
                    symbol=package,
                    reason=f"pick the {self.tag} wheel file for your Python version",
                )
                continue
            first = minimums.get(package)
            if first is None:
                self.report(
                    ctx,
                    start,
                    end,
                    f"{label} pins a CUDA 12.8 build",
                    symbol=package,
                    reason=f"the tool does not know which {package} releases have {self.tag} "
                    "builds; check and change the pin by hand",
                )
            elif _cuda.version_tuple(ver) < _cuda.version_tuple(first):
                self.report(
                    ctx,
                    start,
                    end,
                    f"{label} pins a CUDA 12.8 build",
                    symbol=package,
                    reason=f"{package} {ver} has no {self.tag} wheels (they start at "
                    f"{package} {first}); upgrade the pin, then use +{self.tag}",
                )
            else:
                self.report(
                    ctx,
                    start,
                    end,
                    f"{label} pins a CUDA 12.8 build; use +{self.tag}",
                    symbol=package,
                    replacement=f"{plus}{self.tag}",
                )
