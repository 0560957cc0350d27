"""Behaviour oracle for rule fixture pairs: `before` and `after` run on the same inputs and agree.

A pair declares how to run it in a sidecar `fixtures/rules/<CODE>/<case>.oracle.py` holding

    def calls(m, side):
        return {"label": lambda: m.some_function(...), ...}

`m` is the fixture module (before or after, imported under a unique name from a fresh working
folder, so files it writes land there), `side` is "before" or "after" (only for pairs whose
reference is eager code rather than TorchScript: MIG131 captures what a trace would freeze).
Each call runs with torch's seed reset to 0; outputs (tensors, scalars, strings, None and
nested tuples/lists/dicts of them) are compared with torch.testing.assert_close. `before`
runs as written, so it scripts or traces where the fixture does.

Optional sidecar names: BEFORE_IMPORT_FAILS = "why" (the original cannot even be imported,
e.g. torch.export of a data-dependent branch at module level; its definitions are kept).

Pairs that cannot run are listed in TEXT_ONLY with the reason; pairs the oracle shows to be
wrong are listed in KNOWN_DEFECTS (label -> reason) and run as strict xfails.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import sys
import traceback
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

from tests.fixture_cases import Case, all_cases

#: Python fixture pairs that are compared as text only, and why they cannot run here.
TEXT_ONLY = {
    "MIG203/mobile_forms": "optimize_for_mobile needs a torch built with XNNPACK; the CPU wheel "
    "raises 'XNNPACK is not enabled', so the original cannot run",
    "MIG116/freeze_optimize": "the original raises: torch.jit.freeze of the module "
    "optimize_for_inference already froze fails ('no attribute training')",
    "MIG304/modal_image": "needs the modal package and a container registry; a CUDA image tag "
    "changes by design",
    "MIG306/env_paths": "CUDA toolkit paths: the values change by design (12.8 -> 13.0)",
    "MIG143/from_pretrained_flag": "needs transformers and pretrained weights; neither is "
    "installed or downloadable here",
}

#: Pairs whose after does not behave like the before: case -> {label: defect}. Mismatches of
#: these labels raise KnownDefect (strict xfail); any other mismatch is a plain failure.
KNOWN_DEFECTS: dict[str, dict[str, str]] = {
    "MIG131/if_without_else": {
        "<import>": "MIG131 rewrites Clip.forward to torch.cond while torch.jit.script(Clip()) "
        "stays (MIG101 is only assisted there: no example inputs), and TorchScript cannot "
        "compile the nested branch functions: even a full `migrate apply` leaves a file that "
        "fails at import",
    },
    "MIG131/ternary": {
        "<import>": "with only MIG131 applied, the module-level torch.jit.trace(m, ...) stays "
        "and cannot trace torch.cond (a full apply also rewrites the trace and works): the "
        "rewrite is safe only together with its capture's rewrite",
    },
}


class KnownDefect(AssertionError):
    """A listed defect reproduced (the test is a strict xfail until the rule is fixed)."""


class OracleError(AssertionError):
    """before and after disagree."""


def oracle_path(case: Case) -> Path:
    return case.before.with_name(f"{case.name}.oracle.py")


def python_pairs() -> list[Case]:
    """Fixture cases of Python code with an after file: the population the oracle covers."""
    return [c for c in all_cases() if c.before.name.endswith(".before.py") and _has_after(c)]


def text_pairs() -> list[Case]:
    """Pairs of configuration files (MIG3xx): nothing to execute."""
    return [c for c in all_cases() if not c.before.name.endswith(".before.py") and _has_after(c)]


def _has_after(case: Case) -> bool:
    return case.sibling("after").exists()


@dataclass
class Outcome:
    """What one side produced: label -> value, or label -> Raised."""

    values: dict[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class Raised:
    error: str

    def __str__(self) -> str:
        return self.error


_counter = [0]


def _import(path: Path, tag: str, allow_failure: bool = False) -> ModuleType:
    """Import a file under a unique module name (every fixture defines the same names).
    The module stays registered: TorchScript and dynamo look functions' modules up by name."""
    _counter[0] += 1
    name = f"_oracle_{_counter[0]}_{tag}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception:
        if not allow_failure:
            raise
        module.__dict__["__import_error__"] = traceback.format_exc(limit=1)
    return module


def _describe(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return f"{type(error).__name__}: {lines[0] if lines else ''}"[:300]


@contextlib.contextmanager
def _inside(folder: Path):
    old = os.getcwd()
    folder.mkdir(parents=True, exist_ok=True)
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(old)


def run_side(case: Case, source: Path, side: str, workdir: Path) -> Outcome:
    import torch

    spec = _import(oracle_path(case), f"{case.code}_{case.name}_oracle")
    import_fails = getattr(spec, "BEFORE_IMPORT_FAILS", None)
    outcome = Outcome()
    with _inside(workdir / side), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.manual_seed(0)
        tag = f"{case.code}_{case.name}_{side}"
        try:
            module = _import(source, tag, allow_failure=side == "before" and bool(import_fails))
        except Exception as error:
            outcome.values["<import>"] = Raised(_describe(error))
            return outcome
        if side == "before" and import_fails:
            assert "__import_error__" in module.__dict__, (
                f"{case}: BEFORE_IMPORT_FAILS is set but the original imports cleanly"
            )
        for label, thunk in spec.calls(module, side).items():
            torch.manual_seed(0)
            try:
                outcome.values[label] = thunk()
            except Exception as error:
                outcome.values[label] = Raised(_describe(error))
    return outcome


def compare(before: object, after: object, where: str) -> None:
    """assert_close on tensors and numbers, equality on the rest, recursively."""
    import torch

    if isinstance(before, dict):
        assert isinstance(after, dict), f"{where}: dict vs {type(after).__name__}"
        assert before.keys() == after.keys(), f"{where}: keys {list(before)} vs {list(after)}"
        for key in before:
            compare(before[key], after[key], f"{where}[{key!r}]")
    elif isinstance(before, (list, tuple)):
        assert isinstance(after, (list, tuple)), f"{where}: sequence vs {type(after).__name__}"
        assert len(before) == len(after), f"{where}: {len(before)} items vs {len(after)}"
        for index, (b, a) in enumerate(zip(before, after, strict=True)):
            compare(b, a, f"{where}[{index}]")
    elif isinstance(before, (torch.Tensor, int, float, complex)) and not isinstance(before, bool):
        torch.testing.assert_close(after, before, msg=lambda m: f"{where}: {m}")
    elif before is None or isinstance(before, (str, bytes, bool)):
        assert type(after) is type(before) and after == before, f"{where}: {before!r} vs {after!r}"
    else:
        raise TypeError(f"{where}: the oracle compares values, not {type(before).__name__}")


def check_pair(case: Case, workdir: Path, after: Path | None = None) -> list[str]:
    """Run both sides; raise OracleError on an unlisted mismatch, KnownDefect when only listed
    labels disagree. Returns the labels compared."""
    before_out = run_side(case, case.before, "before", workdir)
    after_out = run_side(case, after or case.sibling("after"), "after", workdir)
    broken = [f"{k}: {v}" for k, v in before_out.values.items() if isinstance(v, Raised)]
    assert not broken, f"{case}: the original fails, fix the sidecar: {broken}"
    known = KNOWN_DEFECTS.get(str(case), {})
    unexpected, expected = [], []
    labels = list(before_out.values)
    if "<import>" in after_out.values:
        labels = ["<import>"]
        before_out.values["<import>"] = "imports"
    for label in labels:
        got = after_out.values.get(label, Raised("missing"))
        try:
            if isinstance(got, Raised):
                raise OracleError(f"after raised {got}")
            compare(before_out.values[label], got, label)
        except AssertionError as error:
            message = f"{case} {label}: {str(error).strip().splitlines()[0]}"
            (expected if label in known else unexpected).append(message)
    if unexpected:
        raise OracleError("before and after disagree:\n" + "\n".join(unexpected))
    if expected:
        raise KnownDefect("\n".join(expected))
    return labels


# --------------------------------------------------------------------------- sidecar helpers


def randn(*shape: int, seed: int = 0):
    """A fixed tensor, independent of what the fixture module drew at import."""
    import torch

    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def repository_module(name: str, **definitions) -> None:
    """A module of the fixture's own repository it imports (`from graph_utils import spmm`),
    registered under that name so both sides import the same definitions."""
    module = ModuleType(name)
    module.__dict__.update(definitions)
    sys.modules[name] = module


def as_module(fn):
    """A plain function as an nn.Module, for torch.export."""
    import torch

    class Wrapped(torch.nn.Module):
        def forward(self, *args, **kwargs):
            return fn(*args, **kwargs)

    return Wrapped()


def write_model(path: str, model, example: tuple) -> None:
    """The artifact a fixture would load, in the format its suffix names."""
    import torch

    suffix = Path(path).suffix
    if suffix in (".pt", ".pth"):
        torch.jit.save(torch.jit.trace(model, example), path)
    elif suffix == ".ptl":
        torch.jit.trace(model, example)._save_for_lite_interpreter(path)
    elif suffix == ".pt2":
        torch.export.save(torch.export.export(model, example), path)
    elif suffix == ".pte":
        from executorch.backends.xnnpack.partition.xnnpack_partitioner import (
            XnnpackPartitioner,
        )
        from executorch.exir import to_edge_transform_and_lower

        program = torch.export.export(model, example)
        lowered = to_edge_transform_and_lower(program, partitioner=[XnnpackPartitioner()])
        Path(path).write_bytes(lowered.to_executorch().buffer)
    else:
        raise ValueError(f"no artifact format for {path}")


def load_artifact(source):
    """A callable for a saved TorchScript (.pt/.pth/.ptl), export (.pt2) or ExecuTorch (.pte)
    artifact; `source` is a path or the bytes of a buffer."""
    import io

    import torch

    if isinstance(source, bytes):
        try:
            return torch.jit.load(io.BytesIO(source))
        except RuntimeError:
            return torch.export.load(io.BytesIO(source)).module()
    suffix = Path(source).suffix
    if suffix in (".pt", ".pth"):
        return torch.jit.load(source)
    if suffix == ".ptl":
        from torch.jit.mobile import _load_for_lite_interpreter

        return _load_for_lite_interpreter(source)
    if suffix == ".pt2":
        return torch.export.load(source).module()
    if suffix == ".pte":
        from executorch.runtime import Runtime

        method = Runtime.get().load_program(source).load_method("forward")
        return lambda *args: method.execute(list(args))[0]
    raise ValueError(f"no loader for {source}")


def saved(stem: str, *args):
    """Run every artifact saved in the working folder as `stem.<suffix>` on args; they must
    agree with each other (a side may save the same model twice); returns the output."""
    files = sorted(Path().glob(f"{stem}.*"))
    assert files, f"nothing saved as {stem}.* in {os.getcwd()}"
    outputs = [load_artifact(str(f))(*args) for f in files]
    for other, path in zip(outputs[1:], files[1:], strict=True):
        compare(outputs[0], other, str(path))
    return outputs[0]


def tiny_model():
    """A module taking any shape, an optional second input and an optional mask keyword."""
    import torch

    class Tiny(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = torch.nn.Parameter(torch.tensor([1.5]))

        def forward(self, x, y=None, mask=None):
            out = x * self.scale + 1
            if y is not None:
                out = out + y
            if mask is not None:
                out = out * mask
            return out

    return Tiny().eval()
