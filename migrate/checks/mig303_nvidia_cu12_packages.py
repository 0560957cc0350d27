"""MIG303: CUDA 12 library packages: pip `nvidia-*-cu12` wheels and apt `cuda-*-12-8`."""

from __future__ import annotations

import re

from migrate.checks import _cuda
from migrate.checks.base import FileContext

PIP = re.compile(
    r"(?<![\w.-])(?P<name>nvidia[-_.](?P<lib>[a-z0-9]+(?:[-_.][a-z0-9]+)*?)[-_.]cu12)(?![\w.-]*[\w])",
    re.I,
)
# What follows a name that pins a version: `==9.1.0.70`, `>=12`, `[extra]==`, TOML `= "..."`.
PINNED = re.compile(r"^\s*(?:\[[^\]]*\]\s*)?(?:[=<>~!]=?|\"?\s*=\s*[\"'{])")
WHEEL_FILE = re.compile(r"^-\d")
APT = re.compile(r"(?<![\w.+-])(?P<name>(?:cuda|lib[a-z0-9]+)(?:-[a-z0-9]+)*?)-12-8(?![\w.-]*\w)")
APT_PIN = re.compile(r"^=\S")
APT_VERSION = re.compile(
    r"(?<![\w.-])(?P<name>lib[a-z0-9-]+)=(?P<ver>[\w.:~-]*\+cuda12\.8)(?![\w.])"
)


class NvidiaCu12Packages(_cuda.CudaTextCheck):
    code = "MIG303"
    prefilter = r"cu12|12-8|cuda12"
    kinds = _cuda.PIP_KINDS | {_cuda.PYTHON}

    def scan(self, ctx: FileContext, code: str, kind: str) -> None:
        table = {
            k.lower(): str(v) for k, v in _cuda.rule_data("cuda13_packages", self.code).items()
        }
        pin = _cuda.torch_pin_problem(code, self.target)
        for m in PIP.finditer(code):
            name = m.group("name")
            sep = name[len("nvidia")]
            canonical = re.sub(r"[-_.]", "-", name.lower())
            after = code[m.end() : code.find("\n", m.end()) if "\n" in code[m.end() :] else None]
            new = table.get(canonical)
            if WHEEL_FILE.match(after):
                self.report(
                    ctx,
                    m.start(),
                    m.end(),
                    f"`{name}` wheel file is a CUDA 12 build",
                    symbol=canonical,
                    reason=f"use the CUDA 13 package{f' `{new}`' if new else ''} by name instead",
                )
                continue
            if new is None:
                self.report(
                    ctx,
                    m.start(),
                    m.end(),
                    f"`{name}` is a CUDA 12 library package",
                    symbol=canonical,
                    reason="the tool does not know its CUDA 13 package; find it (or drop the "
                    "line if torch pulls it in) by hand",
                )
                continue
            spelled = new.replace("-", sep) if sep != "-" else new
            if PINNED.match(after):
                self.report(
                    ctx,
                    m.start(),
                    m.end(),
                    f"`{name}` is a CUDA 12 library package pinned "
                    f"to a CUDA 12 release; its CUDA 13 package is `{new}`",
                    symbol=canonical,
                    reason="the pinned version does not exist for CUDA 13: drop the line (the "
                    f"{self.tag} torch wheels pull their own) or pin the release torch requires",
                )
                continue
            self.report(
                ctx,
                m.start(),
                m.end(),
                f"`{name}` is a CUDA 12 library package; use `{spelled}`",
                symbol=canonical,
                replacement=spelled,
                reason=pin,
            )
        if kind in (_cuda.DOCKER, _cuda.SHELL, _cuda.YAML, _cuda.MAKE):
            self._apt(ctx, code)

    def _apt(self, ctx: FileContext, code: str) -> None:
        major, minor = self.target.split(".")
        for m in APT_VERSION.finditer(code):
            self.report(
                ctx,
                m.start(),
                m.end(),
                f"apt pin `{m.group()}` is a CUDA 12.8 build",
                symbol=m.group("name"),
                reason=f"pick the release built for CUDA {self.target} (`+cuda{self.target}`) "
                "by hand",
            )
        for m in APT.finditer(code):
            name = m.group("name")
            old = f"{name}-12-8"
            new = f"{name}-{major}-{minor}"
            if APT_PIN.match(code[m.end() : m.end() + 2]):
                self.report(
                    ctx,
                    m.start(),
                    m.end(),
                    f"apt package `{old}` is the CUDA 12.8 build; its CUDA {self.target} "
                    f"package is `{new}`",
                    symbol=old,
                    reason="its pinned version is a CUDA 12.8 release; pin the CUDA "
                    f"{self.target} release by hand",
                )
                continue
            self.report(
                ctx,
                m.start(),
                m.end(),
                f"apt package `{old}` is the CUDA 12.8 build; use `{new}`",
                symbol=old,
                replacement=new,
            )
