"""Example inputs: load an inputs file, parse shape specs, and generate seeded samples.

Sample generation is a plain generator (:func:`iter_samples`) yielding
:class:`Sample` objects, so that further strategies (e.g. a future
``--branches`` search for samples that take each side of a data-dependent
branch) can be chained onto it without touching the comparison code.
"""

from __future__ import annotations

import math
import os
import zipfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from migrate.verify import options
from migrate.verify.errors import VerifyError, describe
from migrate.verify.options import (  # noqa: F401 (DynamicDim, parse_dynamic_dims: imported from here)
    DTYPE_NAMES,
    DynamicDim,
    parse_dynamic_dims,
)

#: Shape-spec dtype names -> torch dtypes (the names are read in migrate.verify.options).
DTYPES: dict[str, torch.dtype] = {name: getattr(torch, to) for name, to in DTYPE_NAMES.items()}


@dataclass(frozen=True)
class TensorSpec:
    """A tensor described on the command line: shape, dtype and value range for integers."""

    shape: tuple[int, ...]
    dtype: torch.dtype
    low: float | None = None
    high: float | None = None


@dataclass
class Sample:
    """One set of positional arguments plus where it came from."""

    name: str
    args: tuple[Any, ...]
    meta: dict[str, Any] = field(default_factory=dict)


def parse_shape_spec(spec: str) -> TensorSpec | int | float | bool:
    """options.parse_shape_spec, with the dtype as torch's."""
    parsed = options.parse_shape_spec(spec)
    if not isinstance(parsed, options.ShapeSpec):
        return parsed
    return TensorSpec(parsed.shape, DTYPES[parsed.dtype], parsed.low, parsed.high)


def materialize(spec: TensorSpec | int | float | bool, gen: torch.Generator) -> Any:
    """A concrete example value for a spec (seeded)."""
    if not isinstance(spec, TensorSpec):
        return spec
    return _random_tensor(spec.shape, spec.dtype, gen, spec.low, spec.high)


def _random_tensor(
    shape: Sequence[int],
    dtype: torch.dtype,
    gen: torch.Generator,
    low: float | None = None,
    high: float | None = None,
) -> torch.Tensor:
    shape = tuple(shape)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=gen).bool()
    if dtype.is_floating_point or dtype.is_complex:
        t = torch.randn(shape, generator=gen, dtype=torch.float32)
        if low is not None and high is not None:
            t = torch.rand(shape, generator=gen) * (high - low) + low
        return t.to(dtype)
    lo = int(low) if low is not None else 0
    hi = int(high) if high is not None else 10
    return torch.randint(lo, hi + 1, shape, generator=gen, dtype=torch.int64).to(dtype)


def _check_inputs_zip(path: Path) -> None:
    """A zip-format inputs file is refused before torch reads it when its sizes could
    exhaust memory (a zip bomb) or two entries share a name (see archive_zip.checked_entries)."""
    from migrate.verify.archive_zip import ArchiveUnreadable, checked_entries

    if not zipfile.is_zipfile(path):
        return
    try:
        with zipfile.ZipFile(path) as zf:
            checked_entries(path, zf)
    except ArchiveUnreadable as exc:
        raise VerifyError("inputs", str(exc)) from exc
    except (OSError, zipfile.BadZipFile, ValueError) as exc:
        raise VerifyError("inputs", f"cannot read inputs file {path}: {exc}") from exc


def load_inputs_file(path: str | Path) -> tuple[Any, ...]:
    """Load a ``torch.save``-d tuple (or list, or single tensor) of example values."""
    p = Path(path)
    if not p.exists():
        raise VerifyError("usage", f"inputs file not found: {p}")
    _check_inputs_zip(p)
    try:
        obj = torch.load(p, map_location="cpu", weights_only=True)
    except Exception as exc:
        raise VerifyError(
            "inputs",
            f"cannot read inputs file {p} (expected torch.save of a tuple): {describe(exc)}",
        ) from exc
    if isinstance(obj, torch.Tensor):
        return (obj,)
    if isinstance(obj, list):
        return tuple(obj)
    if isinstance(obj, tuple):
        return obj
    raise VerifyError(
        "inputs",
        f"inputs file {p} holds a {type(obj).__name__}; expected a tuple of example values",
    )


def default_max_input_bytes() -> int:
    """A quarter of physical memory (1 GiB when the platform does not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 4
    except (ValueError, OSError, AttributeError):  # pragma: no cover - non-POSIX
        return 2**30


def spec_bytes(spec: TensorSpec | int | float | bool) -> int:
    if not isinstance(spec, TensorSpec):
        return 0
    return math.prod(spec.shape) * spec.dtype.itemsize


def _human(n: int) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n < 1024 or unit == "PiB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return str(n)  # pragma: no cover


def check_input_bytes(specs: Sequence[Any], copies: int, limit: int | None) -> None:
    """Refuse sample inputs whose estimated size (all ``copies`` samples) exceeds ``limit``."""
    limit = default_max_input_bytes() if limit is None else limit
    one = sum(spec_bytes(s) for s in specs)
    total = one * max(copies, 1)
    if total > limit:
        raise VerifyError(
            "usage",
            f"the sample inputs would take {_human(total)} ({copies} sample(s) of "
            f"{_human(one)}), over the limit of {_human(limit)}; use smaller shapes, fewer "
            "--samples or --max-input-bytes",
        )


def example_from_options(
    inputs: str | None,
    shapes: Sequence[str],
    seed: int,
    copies: int = 1,
    max_bytes: int | None = None,
) -> tuple[Any, ...] | None:
    """The example from ``--inputs`` or ``--input-shape`` (mutually exclusive), or None.

    For shape specs the bytes of ``copies`` samples are estimated before anything
    is allocated (:func:`check_input_bytes`).
    """
    if inputs and shapes:
        raise VerifyError("usage", "give either --inputs or --input-shape, not both")
    if inputs:
        return load_inputs_file(inputs)
    if shapes:
        specs = [parse_shape_spec(s) for s in shapes]
        check_input_bytes(specs, copies, max_bytes)
        gen = torch.Generator().manual_seed(seed)
        return tuple(materialize(s, gen) for s in specs)
    return None


def dynamic_shapes_for(example: tuple[Any, ...], dims: Sequence[DynamicDim]) -> Any:
    """The ``dynamic_shapes`` argument of ``torch.export.export`` for the declared dims."""
    if not dims:
        return None
    from torch.export import Dim

    spec: list[Any] = [None] * len(example)
    symbols: dict[str, Any] = {}
    for d in dims:
        if d.input >= len(example):
            raise VerifyError(
                "usage", f"--dynamic-dim names input {d.input}, the model takes {len(example)}"
            )
        x = example[d.input]
        if not isinstance(x, torch.Tensor) or d.dim >= x.dim():
            raise VerifyError(
                "usage",
                f"--dynamic-dim {d.input}:{d.dim}: input {d.input} has no dimension {d.dim}",
            )
        if not d.min <= x.shape[d.dim] <= d.max:
            raise VerifyError(
                "usage",
                f"--dynamic-dim {d.input}:{d.dim}:{d.min}:{d.max}: the example has size "
                f"{x.shape[d.dim]} there, outside the range",
            )
        if spec[d.input] is None:
            spec[d.input] = {}
        if d.label not in symbols:  # one object per name: inputs that share a batch
            symbols[d.label] = Dim(d.label, min=d.min, max=d.max)
        spec[d.input][d.dim] = symbols[d.label]
    return tuple(spec)


def _value_range(t: torch.Tensor) -> tuple[int, int]:
    if t.numel() == 0:
        return 0, 1
    return int(t.min().item()), int(t.max().item())


def random_like(example: tuple[Any, ...], gen: torch.Generator, sizes: dict | None = None):
    """Random values with the example's shapes and dtypes.

    Floating inputs are standard normal; integer inputs stay within the
    example's [min, max]; bools are random; Python scalars (which export
    specialises on) are kept.  ``sizes`` maps ``(input, dim)`` to a new size.
    """
    out = []
    for i, x in enumerate(example):
        if isinstance(x, torch.Tensor):
            shape = list(x.shape)
            for (inp, dim), size in (sizes or {}).items():
                if inp == i:
                    shape[dim] = size
            if x.dtype == torch.bool or x.dtype.is_floating_point or x.dtype.is_complex:
                out.append(_random_tensor(shape, x.dtype, gen))
            else:
                lo, hi = _value_range(x)
                out.append(_random_tensor(shape, x.dtype, gen, lo, hi))
        else:
            out.append(x)
    return tuple(out)


def iter_samples(
    example: tuple[Any, ...],
    n: int,
    seed: int,
    dynamic_dims: Sequence[DynamicDim] = (),
    recorded: Sequence[Sequence[Sequence[int]]] | None = None,
) -> Iterator[Sample]:
    """Yield the example itself, ``n`` seeded random samples of the same shapes and dtypes,
    then, for every declared dynamic dimension, samples at its other sizes (min, middle, max);
    or, given the shapes a recorded run's calls had (each call's tensor shapes, in argument
    order), one sample of each of those instead."""
    yield Sample("example", tuple(example), {"kind": "example"})
    gen = torch.Generator().manual_seed(seed)
    for k in range(n):
        yield Sample(f"random[{k}]", random_like(example, gen), {"kind": "random", "seed": seed})
    if recorded is not None:
        yield from _recorded_samples(example, gen, recorded)
        return
    groups: dict[str, list[DynamicDim]] = {}  # a shared symbol varies all its dims at once
    for d in dynamic_dims:
        groups.setdefault(d.label, []).append(d)
    for label, group in groups.items():
        d = group[0]
        current = example[d.input].shape[d.dim]
        for size in sorted({d.min, (d.min + d.max) // 2, d.max} - {current}):
            yield Sample(
                f"{label}={size}",
                random_like(example, gen, {(g.input, g.dim): size for g in group}),
                {"kind": "dynamic", "input": d.input, "dim": d.dim, "size": size},
            )


def with_dynamic_batch(
    example: tuple[Any, ...], dims: list[DynamicDim], limit: int | None
) -> tuple[tuple[Any, ...], list[DynamicDim]]:
    """``--dynamic-batch MAX``: dimension 0 of every tensor input ranges over 1..MAX as one
    symbol, ``batch``. An example batch of 1 is doubled (its rows repeated): torch.export
    fixes a size of 1 to a constant, so that batch could never vary."""
    if limit is None:
        return example, dims
    tensors = [k for k, x in enumerate(example) if isinstance(x, torch.Tensor) and x.dim() >= 1]
    if not tensors:
        raise VerifyError("usage", "--dynamic-batch: the model takes no tensor with a batch")
    options.check_dynamic_batch(limit, dims, [])
    sizes = {example[k].shape[0] for k in tensors}
    if len(sizes) > 1:
        raise VerifyError(
            "usage",
            f"--dynamic-batch: the inputs' first sizes differ ({sorted(sizes)}): not one batch",
        )
    (size,) = sizes
    if size > limit:
        raise VerifyError(
            "usage", f"--dynamic-batch {limit}: the example's batch {size} is above it"
        )
    out = list(example)
    if size == 1:
        for k in tensors:
            out[k] = torch.cat([example[k], example[k]])
    batch = [DynamicDim(k, 0, 1, limit, "batch") for k in tensors]
    return tuple(out), [*dims, *batch]


def _recorded_samples(example: tuple[Any, ...], gen, recorded) -> Iterator[Sample]:
    tensors = [i for i, x in enumerate(example) if isinstance(x, torch.Tensor)]
    for joint in recorded:
        if len(joint) != len(tensors):
            raise VerifyError(
                "usage",
                f"a recorded call has {len(joint)} tensors, the example {len(tensors)}",
            )
        sizes = {
            (i, dim): size
            for i, shape in zip(tensors, joint, strict=True)
            for dim, size in enumerate(shape)
        }
        label = " ".join("x".join(map(str, shape)) for shape in joint)
        yield Sample(
            f"recorded[{label}]",
            random_like(example, gen, sizes),
            {"kind": "recorded", "shapes": [list(s) for s in joint]},
        )


def scalar_variations(example: tuple[Any, ...], seed: int) -> Iterator[Sample]:
    """For each Python scalar input (which export bakes into the program), the example with
    that input changed: ``int`` +1, ``bool`` negated, ``float`` +0.5."""
    for i, x in enumerate(example):
        if isinstance(x, bool):
            value: Any = not x
        elif isinstance(x, int):
            value = x + 1
        elif isinstance(x, float):
            value = x + 0.5
        else:
            continue
        args = tuple(value if j == i else a for j, a in enumerate(example))
        yield Sample(
            f"input{i}={value!r}", args, {"kind": "specialisation", "input": i, "value": value}
        )


def describe_args(args: tuple[Any, ...]) -> str:
    parts = []
    for a in args:
        if isinstance(a, torch.Tensor):
            dt = str(a.dtype).replace("torch.", "")
            parts.append(f"{'x'.join(map(str, a.shape)) or 'scalar'}:{dt}")
        else:
            parts.append(f"{type(a).__name__}={a!r}")
    return "(" + ", ".join(parts) + ")"
