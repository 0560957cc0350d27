"""Load the things `verify`/`convert` compare: TorchScript archives, callables, artifacts."""

from __future__ import annotations

import importlib
import inspect
import os
import sys
import warnings
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from migrate.verify.archive_zip import ArchiveUnreadable
from migrate.verify.audit import ArchiveRefused, audit_archive
from migrate.verify.errors import VerifyError, describe
from migrate.verify.options import is_callable_spec
from migrate.verify.pt2_audit import audit_pt2


@dataclass
class Target:
    """What `verify` was pointed at."""

    kind: str  # "archive" or "callable"
    spec: str
    name: str
    reference: Any  # torch.jit.ScriptModule (the TorchScript reference)
    module: nn.Module | None = None  # eager module for callables
    example: tuple[Any, ...] | None = None  # example inputs the callable returned


def _check_zip(path: Path, what: str, marker: str) -> list[str]:
    if not path.exists():
        raise VerifyError("load", f"no such file: {path}")
    if path.is_dir():
        raise VerifyError("load", f"{path} is a directory, expected {what}")
    if not zipfile.is_zipfile(path):
        raise VerifyError("load", f"{path} is not {what} (not a zip archive)")
    with zipfile.ZipFile(path) as zf:
        names = zf.namelist()
    return names


def load_archive(path: str | Path, trust: bool = False) -> Any:
    """Load a ``torch.jit.save`` archive on the CPU, after auditing its code unless ``trust``."""
    p = Path(path)
    names = _check_zip(p, "a TorchScript archive", "code/")
    if not any("/code/" in n or n.startswith("code/") for n in names):
        hint = ""
        if any(n.endswith("data.pkl") for n in names) and not any(
            n.endswith("constants.pkl") for n in names
        ):
            hint = " (it looks like a torch.save checkpoint; TorchScript archives come from torch.jit.save)"
        if any("serialized_exported_program" in n or "models/" in n for n in names):
            hint = " (it looks like a torch.export .pt2 archive)"
        raise VerifyError("load", f"{p} is not a TorchScript archive{hint}")
    try:
        audit_archive(p, code=not trust)  # the zip's sizes and names are checked always
    except (ArchiveRefused, ArchiveUnreadable) as exc:
        raise VerifyError("audit", str(exc)) from exc
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return torch.jit.load(str(p), map_location="cpu")
    except Exception as exc:
        raise VerifyError("load", f"cannot load TorchScript archive {p}: {describe(exc)}") from exc


def load_pt2(path: str | Path, trust: bool = False) -> Any:
    """``torch.export.load`` of a .pt2 given by the user, after its audit unless ``trust``
    (torch.export.load unpickles and evaluates parts of the archive)."""
    p = Path(path)
    _check_zip(p, "a torch.export .pt2 archive", "")
    try:
        audit_pt2(p, trust)
    except ArchiveUnreadable as exc:
        raise VerifyError("audit", str(exc)) from exc
    try:
        return torch.export.load(str(p))
    except Exception as exc:
        raise VerifyError("load", f"cannot load exported program {p}: {describe(exc)}") from exc


def check_pte(path: str | Path) -> Path:
    p = Path(path)
    if not p.exists():
        raise VerifyError("load", f"no such file: {p}")
    with open(p, "rb") as fh:
        head = fh.read(8)
    if head[4:8] != b"ET12" and b"ET" not in head:
        raise VerifyError("load", f"{p} is not an ExecuTorch program (.pte)")
    return p


def import_callable(spec: str) -> Any:
    """Import ``package.module:attr`` (the current directory is importable)."""
    mod_name, _, attr = spec.rpartition(":")
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        mod = importlib.import_module(mod_name)
    except SystemExit as exc:
        raise VerifyError(
            "load", f"importing {mod_name!r} called sys.exit({exc.code!r}); nothing was verified"
        ) from exc
    except Exception as exc:
        raise VerifyError("load", f"cannot import {mod_name!r}: {describe(exc)}") from exc
    obj: Any = mod
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise VerifyError("load", f"{mod_name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    return obj


def call_model_factory(spec: str) -> tuple[nn.Module, tuple[Any, ...] | None]:
    """Call ``package.module:callable``; it returns a module or ``(module, example_inputs)``.

    An ``nn.Module`` subclass or instance named directly is accepted as well.
    """
    obj = import_callable(spec)
    if isinstance(obj, nn.Module):
        result: Any = obj
    elif callable(obj):
        try:
            sig = inspect.signature(obj)
            required = [
                p
                for p in sig.parameters.values()
                if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
            ]
        except (TypeError, ValueError):
            required = []
        if required:
            raise VerifyError(
                "load", f"{spec} needs arguments ({', '.join(p.name for p in required)})"
            )
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                result = obj()
        except SystemExit as exc:
            raise VerifyError("load", f"{spec} called sys.exit({exc.code!r})") from exc
        except Exception as exc:
            raise VerifyError("load", f"{spec} raised {describe(exc)}") from exc
    else:
        raise VerifyError("load", f"{spec} is not callable")
    example = None
    if isinstance(result, tuple) and len(result) == 2 and isinstance(result[0], nn.Module):
        result, example = result
        if isinstance(example, list):
            example = tuple(example)
        elif not isinstance(example, tuple):
            example = (example,)
    if not isinstance(result, nn.Module):
        raise VerifyError(
            "load",
            f"{spec} returned {type(result).__name__}; expected an nn.Module or (module, example_inputs)",
        )
    return result, example


def torchscript_of(module: nn.Module, example: tuple[Any, ...], original: str) -> Any:
    """The TorchScript reference of an eager module (trace by default, or script)."""
    with warnings.catch_warnings():
        # Building TorchScript on purpose: it is the reference being migrated from.
        warnings.simplefilter("ignore")
        try:
            if original == "script":
                return torch.jit.script(module)
            return torch.jit.trace(module, example, check_trace=False, strict=False)
        except Exception as exc:
            raise VerifyError(
                "load", f"cannot build the TorchScript reference ({original}): {describe(exc)}"
            ) from exc


def load_target(
    spec: str,
    original: str | None = None,
    example: tuple[Any, ...] | None = None,
    trust: bool = False,
) -> Target:
    if is_callable_spec(spec):
        module, ex = call_model_factory(spec)
        ex = example if example is not None else ex
        if ex is None:
            raise VerifyError(
                "usage",
                f"{spec} returned a module without example inputs; pass --inputs or --input-shape",
            )
        ref = torchscript_of(module, ex, original or "trace")
        name = spec.rpartition(":")[2].replace(".", "_")
        return Target("callable", spec, name, ref, module, ex)
    path = Path(spec)
    if original == "script":
        raise VerifyError("usage", "--original applies to package.module:callable targets only")
    ref = load_archive(path, trust)
    return Target("archive", spec, path.stem, ref, None, example)


def check_signature(ref: Any, example: tuple[Any, ...], method: str = "forward") -> None:
    """Fail with stage ``inputs`` when the example does not fit the method's TorchScript schema."""
    try:
        schema = getattr(ref, method).schema
    except Exception:  # pragma: no cover - exotic archives
        return
    params = [a for a in schema.arguments[1:] if not a.kwarg_only]
    required = [a for a in params if not a.has_default_value()]
    sig = f"{method}(" + ", ".join(f"{a.name}: {a.type}" for a in params) + ")"
    if not len(required) <= len(example) <= len(params):
        raise VerifyError(
            "inputs",
            f"the model takes {len(required)}"
            + (f" to {len(params)}" if len(params) != len(required) else "")
            + f" inputs, {sig}; got {len(example)}",
        )
    for i, (arg, value) in enumerate(zip(params, example, strict=False)):
        kind = str(arg.type)
        ok = True
        if kind == "Tensor":
            ok = isinstance(value, torch.Tensor)
        elif kind == "int":
            ok = isinstance(value, int) and not isinstance(value, bool)
        elif kind == "bool":
            ok = isinstance(value, bool)
        elif kind == "float":
            ok = isinstance(value, float | int) and not isinstance(value, bool)
        if not ok:
            raise VerifyError(
                "inputs",
                f"input {i} ({arg.name}) must be {kind}, got {type(value).__name__}; {sig}",
            )
