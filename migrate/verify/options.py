"""The options of `migrate verify` and `migrate convert`, read and checked without torch.

A mistyped shape or device must cost a user a fraction of a second, not the seconds torch
takes to import: every value a command line (or a manifest row) can give is parsed here, and
the modules that build tensors (:mod:`migrate.verify.inputs`, :mod:`migrate.verify.runners`)
take the parsed values. Nothing here imports torch.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from migrate.config import VERIFY_DEVICE
from migrate.verify.errors import VerifyError

#: Every dtype name a shape spec takes, and the torch dtype (by its attribute name) it means.
DTYPE_NAMES: dict[str, str] = {
    "float32": "float32",
    "float": "float32",
    "f32": "float32",
    "float64": "float64",
    "double": "float64",
    "f64": "float64",
    "float16": "float16",
    "half": "float16",
    "f16": "float16",
    "bfloat16": "bfloat16",
    "bf16": "bfloat16",
    "int64": "int64",
    "long": "int64",
    "int32": "int32",
    "int": "int32",
    "int16": "int16",
    "int8": "int8",
    "uint8": "uint8",
    "bool": "bool",
}
#: Largest dimension torch takes (a signed 64-bit size); larger ones overflow in C++.
MAX_DIM = 2**63 - 1
BACKENDS = ("xnnpack", "portable")
ORIGINALS = ("trace", "script")

_SHAPE_RE = re.compile(
    r"^(?P<shape>-?\d+(?:x-?\d+)*|scalar)"
    r"(?::(?P<dtype>[a-z0-9]+))?"
    r"(?::(?P<low>-?\d+(?:\.\d+)?)\.\.(?P<high>-?\d+(?:\.\d+)?))?$"
)
_SCALAR_RE = re.compile(r"^(?P<kind>int|float|bool)=(?P<value>.+)$")
_DYN_RE = re.compile(r"^(?P<input>\d+):(?P<dim>\d+):(?P<min>\d+):(?P<max>\d+)$")
_SHAPE_FORMS = (
    "expected DIMxDIM...[:DTYPE[:LOW..HIGH]] (e.g. 1x3x224x224:float32, 2x7:int64:0..20) "
    "or int=N / float=X / bool=true"
)


@dataclass(frozen=True)
class ShapeSpec:
    """A tensor described on the command line: sizes, dtype name, value range for integers."""

    shape: tuple[int, ...]
    dtype: str
    low: float | None = None
    high: float | None = None


@dataclass(frozen=True)
class DynamicDim:
    """``--dynamic-dim INPUT:DIM:MIN:MAX``: input INPUT, dimension DIM ranges over MIN..MAX."""

    input: int
    dim: int
    min: int
    max: int
    name: str = ""  # a symbol shared by several inputs (``--dynamic-batch``: ``batch``)

    @property
    def label(self) -> str:
        return self.name or f"in{self.input}_d{self.dim}"


def _malformed(spec: str, why: str) -> VerifyError:
    return VerifyError("usage", f"malformed input spec {spec!r}: {why}")


def parse_shape_spec(spec: str) -> ShapeSpec | int | float | bool:
    """Parse ``1x3x224x224:float32``, ``2x7:int64:0..20``, ``scalar:float32`` or ``int=3``;
    ``VerifyError("usage", "malformed input spec ...")`` on anything else, sizes below 1
    included (an empty tensor exports to a program no real input reaches)."""
    s = spec.strip().lower()
    m = _SCALAR_RE.match(s)
    if m:
        kind, value = m["kind"], m["value"]
        try:
            if kind == "int":
                return int(value)
            if kind == "float":
                return float(value)
            if value in ("1", "true", "yes", "on"):
                return True
            if value in ("0", "false", "no", "off"):
                return False
        except ValueError:
            pass
        raise _malformed(spec, f"bad {kind} value {value!r}")
    m = _SHAPE_RE.match(s)
    if not m:
        raise _malformed(spec, _SHAPE_FORMS)
    shape = () if m["shape"] == "scalar" else tuple(int(d) for d in m["shape"].split("x"))
    for d in shape:
        if d < 1:
            raise _malformed(spec, f"size {d}: every size must be 1 or more")
        if d > MAX_DIM:
            raise _malformed(spec, f"dimension {d} overflows (max {MAX_DIM})")
    dtype = m["dtype"] or "float32"
    if dtype not in DTYPE_NAMES:
        known = ", ".join(sorted(DTYPE_NAMES))
        raise _malformed(spec, f"unknown dtype {dtype!r} (known: {known})")
    low = float(m["low"]) if m["low"] is not None else None
    high = float(m["high"]) if m["high"] is not None else None
    if low is not None and high is not None and high < low:
        raise _malformed(spec, f"empty range {low}..{high}")
    return ShapeSpec(shape, DTYPE_NAMES[dtype], low, high)


def parse_dynamic_dim(spec: str) -> DynamicDim:
    m = _DYN_RE.match(spec.strip())
    if not m:
        raise VerifyError(
            "usage",
            f"malformed dynamic dim {spec!r}: expected INPUT:DIM:MIN:MAX (e.g. 0:0:1:64)",
        )
    d = DynamicDim(int(m["input"]), int(m["dim"]), int(m["min"]), int(m["max"]))
    if d.min > d.max:
        raise VerifyError("usage", f"malformed dynamic dim {spec!r}: min > max")
    return d


def parse_dynamic_dims(specs: Sequence[str]) -> list[DynamicDim]:
    """``--dynamic-dim`` values: ``INPUT:DIM:MIN:MAX``, or ``INPUT:MIN:MAX`` for dimension 0."""
    out = []
    for spec in specs:
        parts = spec.strip().split(":")
        if len(parts) == 3:
            spec = f"{parts[0]}:0:{parts[1]}:{parts[2]}"
        out.append(parse_dynamic_dim(spec))
    return out


def check_dynamic_dims(dims: Sequence[DynamicDim], example: Sequence[object]) -> None:
    """Each dynamic dim names an input the shape specs describe, one of its dimensions, and a
    range holding the example's size there (the same check, on real tensors, runs once the
    example is built from a file)."""
    for d in dims:
        where = f"--dynamic-dim {d.input}:{d.dim}:{d.min}:{d.max}"
        if d.input >= len(example):
            raise VerifyError(
                "usage", f"{where}: names input {d.input}, the shapes give {len(example)}"
            )
        spec = example[d.input]
        if not isinstance(spec, ShapeSpec) or d.dim >= len(spec.shape):
            raise VerifyError("usage", f"{where}: input {d.input} has no dimension {d.dim}")
        if not d.min <= spec.shape[d.dim] <= d.max:
            raise VerifyError(
                "usage",
                f"{where}: the example has size {spec.shape[d.dim]} there, outside the range",
            )


def check_dynamic_batch(limit: int, dims: Sequence[DynamicDim], example: Sequence[object]) -> None:
    """``--dynamic-batch MAX``: a range to vary over (MAX 2 or more), holding every example's
    batch, and not given twice (a ``--dynamic-dim`` of some input's dimension 0)."""
    if limit < 2:
        raise VerifyError("usage", f"--dynamic-batch {limit}: the largest batch must be 2 or more")
    for d in dims:
        if d.dim == 0:
            raise VerifyError(
                "usage",
                f"--dynamic-batch and --dynamic-dim {d.input}:0:{d.min}:{d.max} both vary a batch "
                "dimension: give one of them",
            )
    for k, spec in enumerate(example):
        if isinstance(spec, ShapeSpec) and spec.shape and spec.shape[0] > limit:
            raise VerifyError(
                "usage",
                f"--dynamic-batch {limit}: input {k} has batch {spec.shape[0]}, above it",
            )


#: Devices an AOTInductor package is compiled for (``convert --aoti --device``).
AOTI_DEVICES = re.compile(r"cpu|cuda(?::\d+)?")


def check_aoti_device(value: str) -> None:
    if not AOTI_DEVICES.fullmatch(value.strip().lower()):
        raise VerifyError(
            "usage", f"--device {value!r}: an AOTInductor package is built for cpu or cuda[:N]"
        )


def check_device(value: str) -> str:
    """``auto``, or a device kind torch knows (``cuda:1`` names one of several), as the
    configuration takes it; whether it is there is asked of torch later (runners)."""
    choice = value.strip().lower()
    if not VERIFY_DEVICE.fullmatch(choice):
        raise VerifyError(
            "usage", f"unknown device {value!r} (auto, cpu, cuda[:N], mps or xpu[:N])"
        )
    return choice


def check_method(name: str) -> None:
    """A method an archive can hold: a Python name, not a dunder (those are TorchScript's)."""
    if not name.isidentifier() or (name.startswith("__") and name.endswith("__")):
        raise VerifyError(
            "usage", f"--method {name!r}: not a method name (forward, or an @torch.jit.export one)"
        )


def check_choice(option: str, value: str, choices: Sequence[str]) -> None:
    if value not in choices:
        raise VerifyError("usage", f"{option} must be {' or '.join(choices)}, not {value!r}")


def is_callable_spec(spec: str) -> bool:
    """``package.module:callable`` (and not a path such as ``C:\\x.pt``)."""
    if ":" not in spec or os.path.exists(spec):
        return False
    mod, _, attr = spec.rpartition(":")
    return (
        bool(mod)
        and bool(attr)
        and all(p.isidentifier() for p in mod.split("."))
        and all(p.isidentifier() for p in attr.split("."))
    )


def check_options(
    *,
    inputs: str | None = None,
    input_shapes: Sequence[str] = (),
    dynamic_dims: Sequence[str] = (),
    device: str | None = None,
    method: str | None = None,
    backend: str | None = None,
    original: str | None = None,
    candidates: Sequence[str] = (),
    max_input_bytes: int | None = None,
    out: Path | None = None,
    dynamic_batch: int | None = None,
    aoti: bool | None = None,
) -> None:
    """Every option of verify/convert that torch is not needed to judge; the first problem
    is a ``VerifyError("usage", ...)`` naming the option (or its file) and the cause."""
    if inputs is not None and input_shapes:
        raise VerifyError("usage", "give either --inputs or --input-shape, not both")
    if inputs is not None and not Path(inputs).is_file():
        why = "is a directory" if Path(inputs).is_dir() else "no such file"
        raise VerifyError("usage", f"--inputs {inputs}: {why}")
    specs = []
    for spec in input_shapes:
        try:
            specs.append(parse_shape_spec(spec))
        except VerifyError as exc:
            raise VerifyError("usage", f"--input-shape: {exc.message}") from None
    try:
        dims = parse_dynamic_dims(dynamic_dims)
    except VerifyError as exc:
        raise VerifyError("usage", f"--dynamic-dim: {exc.message}") from None
    if specs:
        check_dynamic_dims(dims, specs)
    if dynamic_batch is not None:
        check_dynamic_batch(dynamic_batch, dims, specs)
    if device is not None:
        try:
            check_device(device)
        except VerifyError as exc:
            raise VerifyError("usage", f"--device: {exc.message}") from None
    # convert (aoti is not None): --device names the package's device, so it needs --aoti.
    if aoti is not None and device is not None:
        if not aoti:
            raise VerifyError(
                "usage", "--device picks the AOTInductor package's device: it needs --aoti"
            )
        check_aoti_device(device)
    if method is not None:
        check_method(method)
    if backend is not None:
        check_choice("--backend", backend, BACKENDS)
    if original is not None:
        check_choice("--original", original, ORIGINALS)
    for spec in candidates:
        suffix = Path(spec).suffix.lower()
        if is_callable_spec(spec):
            continue
        if suffix not in (".pt2", ".pte"):
            raise VerifyError(
                "usage",
                f"--candidate {spec}: expected a .pt2 or .pte file, or package.module:callable",
            )
        if not Path(spec).is_file():
            raise VerifyError("usage", f"--candidate {spec}: no such file")
    if max_input_bytes is not None and max_input_bytes < 1:
        raise VerifyError("usage", f"--max-input-bytes must be 1 or more, not {max_input_bytes}")
    if out is not None and out.exists() and not out.is_dir():
        raise VerifyError("usage", f"--out {out}: exists and is not a directory")


@dataclass
class VerifyConfig:
    """`migrate verify`'s settings, as the command line, a manifest row or a benchmark gives
    them (migrate.verify.verify_flow.run_verify reads them)."""

    target: str
    inputs: str | None = None
    input_shapes: list[str] = field(default_factory=list)
    dynamic_dims: list[str] = field(default_factory=list)
    # Each recorded call's tensor shapes (`migrate record`): the samples take these sizes
    # instead of the dynamic dimensions' min, middle and max.
    recorded_shapes: list[list[list[int]]] | None = None
    device: str = "auto"
    samples: int = 3
    seed: int = 0
    rtol: float | None = None
    atol: float | None = None
    candidates: list[str] = field(default_factory=list)
    default_candidates: bool | None = None  # None: on unless --candidate is given
    original: str | None = None
    backend: str = "xnnpack"
    out: Path | None = None
    # The chosen output folder `out` must stay inside (a batch's --out; default: `out`).
    out_root: Path | None = None
    bench: bool = False
    bench_runs: int = 10  # at least this many timed calls per runtime
    bench_min_time: float = 0.2  # and at least this much measured time
    threads: int | None = None  # --threads: torch and ExecuTorch threads while timing
    debug: bool = False
    branches: bool = False  # --branches: cover both sides of data-dependent conditions
    config_path: str | None = None  # the pyproject.toml the defaults came from
    from_config: list[str] = field(default_factory=list)  # settings taken from it
    trust_archive: bool = False  # --trust-archive: load without the audit
    max_input_bytes: int | None = None  # None: a quarter of physical memory
    method: str | None = None  # --method: check this method of the archive only
    aoti: bool = False  # --aoti: also compile and check an AOTInductor package per device
    dynamic_batch: int | None = None  # --dynamic-batch MAX: dim 0 of every tensor, 1..MAX

    @property
    def root(self) -> Path | None:
        """The folder every artifact stays in (None: a temp folder of its own)."""
        return self.out_root or self.out

    def settings(self) -> dict[str, Any]:
        return {
            "device": self.device,
            "samples": self.samples,
            "seed": self.seed,
            "rtol": self.rtol,
            "atol": self.atol,
            "config": self.config_path,
            "from_config": list(self.from_config),
        }


def check_tolerances(rtol: float | None, atol: float | None) -> None:
    """--rtol and --atol: finite and not negative."""
    for name, value in (("--rtol", rtol), ("--atol", atol)):
        if value is not None and not (value >= 0 and math.isfinite(value)):
            raise VerifyError("usage", f"{name} must be a finite number >= 0, not {value}")
