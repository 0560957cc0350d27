"""Compare outputs leaf by leaf: max abs/rel error, dtype tolerances, worst index."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import torch
import torch.utils._pytree as pytree

#: Default (rtol, atol) by dtype; the same as ``torch.testing.assert_close``.
#: Integers and bools are compared exactly.
DEFAULT_TOLERANCES: dict[torch.dtype, tuple[float, float]] = {
    torch.float16: (1e-3, 1e-5),
    torch.bfloat16: (1.6e-2, 1e-5),
    torch.float32: (1.3e-6, 1e-5),
    torch.float64: (1e-7, 1e-7),
    torch.complex64: (1.3e-6, 1e-5),
    torch.complex128: (1e-7, 1e-7),
}

#: Per-backend overrides where a delegate is known to differ by a few ulps
#: (different kernels, fused multiply-adds, reassociated reductions).
BACKEND_TOLERANCES: dict[str, dict[torch.dtype, tuple[float, float]]] = {
    "xnnpack": {torch.float32: (1e-5, 1e-5), torch.float16: (5e-3, 1e-3)},
    "portable": {torch.float32: (1e-5, 1e-5)},
    # Reference and candidate on an accelerator may pick different kernels
    # (cuDNN algorithms, TF32 convolutions); loosen float32 accordingly.
    "accelerator": {torch.float32: (1e-4, 1e-5)},
    # AOTInductor's generated kernels vectorize and fuse (reassociated sums, fused
    # multiply-adds), as a delegate's do.
    "aoti": {torch.float32: (1e-5, 1e-5), torch.float16: (5e-3, 1e-3)},
}


@dataclass
class Tolerance:
    rtol: float | None = None  # user override for floating outputs
    atol: float | None = None

    def for_leaf(self, dtype: torch.dtype, backend: str | None = None) -> tuple[float, float]:
        if not (dtype.is_floating_point or dtype.is_complex):
            return 0.0, 0.0
        rtol, atol = DEFAULT_TOLERANCES.get(dtype, (1.3e-6, 1e-5))
        if backend and dtype in BACKEND_TOLERANCES.get(backend, {}):
            rtol, atol = BACKEND_TOLERANCES[backend][dtype]
        if self.rtol is not None:
            rtol = self.rtol
        if self.atol is not None:
            atol = self.atol
        return rtol, atol


@dataclass
class LeafResult:
    leaf: str  # e.g. "output", "output['logits']", "output[0]"
    dtype: str
    shape: list[int]
    passed: bool
    max_abs: float
    max_rel: float
    worst_index: list[int] | None
    rtol: float
    atol: float
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["max_abs"] = json_float(self.max_abs)
        d["max_rel"] = json_float(self.max_rel)
        return d


def json_float(x: float) -> float | str:
    if isinstance(x, float) and not math.isfinite(x):
        return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")
    return x


def flatten(out: Any) -> list[tuple[str, Any]]:
    """Output leaves as (name, value), nested tuples/lists/dicts flattened in order."""
    leaves, _ = pytree.tree_flatten_with_path(out)
    return [("output" + pytree.keystr(path), v) for path, v in leaves]


def _dtype_name(x: Any) -> str:
    if isinstance(x, torch.Tensor):
        return str(x.dtype).replace("torch.", "")
    return type(x).__name__


def compare_leaf(
    name: str, ref: Any, cand: Any, tol: Tolerance, backend: str | None = None
) -> LeafResult:
    if not isinstance(ref, torch.Tensor):
        if isinstance(cand, torch.Tensor) and cand.numel() == 1:
            cand = cand.item()
        same = ref == cand
        if isinstance(ref, float) and isinstance(cand, float):
            rtol, atol = tol.for_leaf(torch.float64, backend)
            same = abs(ref - cand) <= atol + rtol * abs(ref) or (
                math.isnan(ref) and math.isnan(cand)
            )
        err = 0.0
        if isinstance(ref, int | float) and isinstance(cand, int | float):
            err = float(abs(ref - cand))
        return LeafResult(
            name, _dtype_name(ref), [], bool(same), err, err, None, 0.0, 0.0,
            "" if same else f"reference {ref!r}, candidate {cand!r}",
        )  # fmt: skip
    rtol, atol = tol.for_leaf(ref.dtype, backend)
    shape = list(ref.shape)
    if not isinstance(cand, torch.Tensor):
        return LeafResult(
            name, _dtype_name(ref), shape, False, math.inf, math.inf, None, rtol, atol,
            f"candidate gave {type(cand).__name__}, reference a tensor",
        )  # fmt: skip
    if list(cand.shape) != shape:
        return LeafResult(
            name, _dtype_name(ref), shape, False, math.inf, math.inf, None, rtol, atol,
            f"shape differs: reference {tuple(shape)}, candidate {tuple(cand.shape)}",
        )  # fmt: skip
    note = ""
    if cand.dtype != ref.dtype:
        note = f"dtype differs: candidate {_dtype_name(cand)}"
    r = ref.detach().cpu()
    c = cand.detach().cpu()
    if r.numel() == 0:
        return LeafResult(name, _dtype_name(ref), shape, not note, 0.0, 0.0, None, rtol, atol, note)
    wide = torch.complex128 if (r.is_complex() or c.is_complex()) else torch.float64
    rf = r.to(wide)
    cf = c.to(wide)
    diff = (rf - cf).abs()
    both_nan = rf.isnan() & cf.isnan()
    diff = torch.where(both_nan, torch.zeros_like(diff), diff)
    same_inf = rf.isinf() & cf.isinf() & (rf == cf)
    diff = torch.where(same_inf, torch.zeros_like(diff), diff)
    diff = torch.where(diff.isnan(), torch.full_like(diff, math.inf), diff)
    mag = rf.abs()
    mag = torch.where(mag.isfinite(), mag, torch.zeros_like(mag))
    rel = torch.where(
        diff == 0, torch.zeros_like(diff), diff / torch.where(mag > 0, mag, torch.zeros_like(mag))
    )
    allowed = atol + rtol * mag
    excess = diff - allowed
    within = bool((excess <= 0).all().item())
    # Failing: the element furthest past its tolerance; passing: the largest error.
    score = diff if within else excess
    flat = int(torch.argmax(score.reshape(-1)).item())
    worst = [int(i) for i in torch.unravel_index(torch.tensor(flat), r.shape)] if r.dim() else []
    passed = within and not note
    return LeafResult(
        name,
        _dtype_name(ref),
        shape,
        passed,
        float(diff.max().item()),
        float(rel.max().item()),
        worst,
        rtol,
        atol,
        note,
    )


def compare_outputs(
    ref_out: Any, cand_out: Any, tol: Tolerance, backend: str | None = None
) -> list[LeafResult]:
    """Compare every output leaf; leaves are matched by position (a .pte returns a flat list)."""
    ref_leaves = flatten(ref_out)
    cand_leaves = flatten(cand_out)
    if len(ref_leaves) != len(cand_leaves):
        return [
            LeafResult(
                "output",
                "-",
                [],
                False,
                math.inf,
                math.inf,
                None,
                0.0,
                0.0,
                f"output structure differs: reference has {len(ref_leaves)} leaves "
                f"({', '.join(n for n, _ in ref_leaves)}), candidate {len(cand_leaves)}",
            )  # fmt: skip
        ]
    return [
        compare_leaf(name, rv, cv, tol, backend)
        for (name, rv), (_, cv) in zip(ref_leaves, cand_leaves, strict=True)
    ]
