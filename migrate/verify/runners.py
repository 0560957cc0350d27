"""Runnable references and candidates per device."""

from __future__ import annotations

import copy
import io
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch.utils._pytree as pytree

from migrate.verify.errors import VerifyError, describe, quiet
from migrate.verify.options import check_device

Runner = Callable[[tuple[Any, ...]], Any]


# --------------------------------------------------------------------------- devices


def accelerator_devices() -> list[str]:
    """The current accelerator ``torch.accelerator`` reports (one device), if any."""
    acc = getattr(torch, "accelerator", None)
    if acc is None or not acc.is_available():
        return []
    dev = acc.current_accelerator()
    return [dev.type] if dev is not None else []


def resolve_devices(choice: str) -> list[str]:
    """``auto``: the CPU plus the accelerator torch reports; otherwise exactly the one asked."""
    choice = check_device(choice)
    if choice == "auto":
        return ["cpu", *accelerator_devices()]
    kind = choice.split(":")[0]
    if kind != "cpu":
        avail = accelerator_devices()
        if kind not in avail:
            raise VerifyError(
                "usage",
                f"device {choice} is not available here"
                + (f" (available: cpu, {', '.join(avail)})" if avail else " (only cpu)"),
            )
    return [choice]


def is_accelerator(device: str) -> bool:
    return not device.startswith("cpu")


def to_device(args: Any, device: str) -> Any:
    return pytree.tree_map(lambda x: x.to(device) if isinstance(x, torch.Tensor) else x, args)


def synchronize(device: str) -> None:
    if is_accelerator(device):
        acc = getattr(torch, "accelerator", None)
        if acc is not None and hasattr(acc, "synchronize"):
            acc.synchronize()


# --------------------------------------------------------------------------- runners


@dataclass
class Prepared:
    """A runtime's own call with its inputs already in the form it takes: ``fn(*args)``.

    ``--bench`` times exactly this call, so nothing of ours (log capture, pytree
    flattening, device moves) runs inside the timed loop.
    """

    fn: Callable[..., Any]
    args: tuple[Any, ...]


class ScriptRunner:
    """A TorchScript module on ``device`` (reloaded there, so the original stays on the CPU)."""

    def __init__(self, ts: Any, device: str, method: str = "forward") -> None:
        self.device = device
        self.method_name = method
        self.source = ts
        if device == "cpu":
            self.mod = ts
        else:
            self.mod = torch.jit.load(io.BytesIO(self._bytes()), map_location=device)

    def _bytes(self) -> bytes:
        buf = io.BytesIO()
        torch.jit.save(self.source, buf)
        return buf.getvalue()

    def __call__(self, args: tuple[Any, ...]) -> Any:
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return getattr(self.mod, self.method_name)(*args)

    def prepare(self, args: tuple[Any, ...]) -> Prepared:
        # forward: the module itself, as users call it (and as the direct timing does).
        fn = self.mod if self.method_name == "forward" else getattr(self.mod, self.method_name)
        return Prepared(fn, tuple(to_device(args, self.device)))

    def loader(self) -> Callable[[], Any]:
        """``torch.jit.load`` of the serialized module, from bytes in memory."""
        data = self._bytes()
        return lambda: torch.jit.load(io.BytesIO(data), map_location=self.device)


class ModuleRunner:
    """An eager ``nn.Module`` (a callable candidate)."""

    def __init__(self, module: Any, device: str) -> None:
        self.device = device
        self.mod = module if device == "cpu" else copy.deepcopy(module).to(device)

    def __call__(self, args: tuple[Any, ...]) -> Any:
        with torch.no_grad():
            return self.mod(*args)

    def prepare(self, args: tuple[Any, ...]) -> Prepared:
        return Prepared(self.mod, tuple(to_device(args, self.device)))


class EpRunner:
    """``ep.module()`` of an ExportedProgram on ``device``."""

    def __init__(self, ep: Any, device: str) -> None:
        self.device = device
        self.ep = ep
        if device != "cpu":
            from torch.export.passes import move_to_device_pass

            self.ep = move_to_device_pass(ep, device)
        self.gm = self.ep.module()

    def __call__(self, args: tuple[Any, ...]) -> Any:
        with torch.no_grad():
            return self.gm(*args)

    def prepare(self, args: tuple[Any, ...]) -> Prepared:
        return Prepared(self.gm, tuple(to_device(args, self.device)))

    def loader(self) -> Callable[[], Any]:
        """``torch.export.load`` of the saved program plus ``.module()``, from bytes in memory."""
        buf = io.BytesIO()
        torch.export.save(self.ep, buf)
        data = buf.getvalue()
        return lambda: torch.export.load(io.BytesIO(data)).module()


_RUNTIME: Any = None


def _runtime() -> Any:
    global _RUNTIME
    if _RUNTIME is None:
        with quiet():
            from executorch.runtime import Runtime

            _RUNTIME = Runtime.get()
    return _RUNTIME


class PteRunner:
    """A ``.pte`` program through ``executorch.runtime`` (CPU); returns a flat list of outputs."""

    def __init__(self, path: Path, debug: bool = False, method: str = "forward") -> None:
        self.path = path
        self.debug = debug
        self.method_name = method
        with quiet(debug) as log:
            try:
                self.method = _runtime().load_program(str(path)).load_method(method)
            except Exception as exc:
                raise VerifyError(
                    "load",
                    f"cannot load ExecuTorch program {path}: {describe(exc)} {log.last_line()}",
                ) from exc

    def __call__(self, args: tuple[Any, ...]) -> Any:
        flat = pytree.tree_leaves(args)
        flat = [x.contiguous() if isinstance(x, torch.Tensor) else x for x in flat]
        with quiet(self.debug) as log:
            try:
                return list(self.method.execute(flat))
            except Exception as exc:
                native = log.last_line() if not self.debug else ""
                raise RuntimeError(describe(exc) + (f" [{native}]" if native else "")) from exc

    def prepare(self, args: tuple[Any, ...]) -> Prepared:
        flat = [
            x.contiguous() if isinstance(x, torch.Tensor) else x for x in pytree.tree_leaves(args)
        ]
        return Prepared(self.method.execute, (flat,))

    def loader(self) -> Callable[[], Any]:
        """Program load plus method load (XNNPACK init included), from bytes in memory."""
        data = self.path.read_bytes()
        runtime = _runtime()
        return lambda: runtime.load_program(data).load_method(self.method_name)


# The factories the pipeline builds candidates with.
script_runner = ScriptRunner
module_runner = ModuleRunner
ep_runner = EpRunner
pte_runner = PteRunner


# --------------------------------------------------------------------------- candidates


@dataclass
class Candidate:
    """Something compared with the TorchScript reference."""

    name: str
    kind: str  # exported_program | pt2 | pte | callable
    source: str  # where it came from (path, spec, or conversion path)
    backend: str | None = None  # ExecuTorch backend; tolerances may differ per backend
    cpu_only: bool = False
    make: Callable[[str], Runner] | None = None
    ep: Any = None  # graph for first-divergence search
    ep_source: str = ""  # "reference" when ep is the reference's own graph
    module: Any = None
    error: VerifyError | None = None  # a candidate that could not be built
    notes: list[str] = field(default_factory=list)
    method: str = "forward"  # the archive's method it is compared with

    def runner(self, device: str) -> Runner:
        assert self.make is not None
        return self.make(device)


def training_modules(module: Any) -> list[str]:
    """Names of submodules left in training mode whose behaviour depends on it."""
    from torch import nn

    sensitive = (nn.Dropout, nn.modules.batchnorm._BatchNorm, nn.AlphaDropout)
    return [
        name or type(m).__name__
        for name, m in module.named_modules()
        if m.training and isinstance(m, sensitive)
    ]
