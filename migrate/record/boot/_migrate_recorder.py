"""The recorder `migrate record` loads into every Python process of the recorded command.

Standalone on purpose (it imports nothing of `migrate`, which the recorded program's
environment may not have). It does nothing until the program itself imports torch: a
meta-path finder waits for `torch` and patches `torch.jit` once torch's own import is done.
It records structure only (kinds, class names, shapes, dtypes, devices, Python types, file
paths), never a tensor value or a scalar's value, and it swallows its own errors: the
program behaves as it would without it. Each process writes its own part file atomically at
exit; `migrate record` merges them (migrate/record/merge.py). Schema: docs/evidence.md.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import linecache
import os
import sys
import threading
import time

PARTS_ENV = "MIGRATE_RECORD_DIR"
ROOT_ENV = "MIGRATE_RECORD_ROOT"
MAX_SIZES = 64  # distinct sizes kept per axis (min and max always)
MAX_SHAPES = 64  # distinct shapes kept per call signature (the tensors' shapes of one call)
MAX_EXAMPLES = 8
MAX_SIGNATURES = 16
_HERE = os.path.abspath(__file__)

_lock = threading.RLock()
_local = threading.local()
_sites: dict[str, dict] = {}
_results: dict[int, tuple] = {}  # id(result) -> (site key, weakref)
_fast: dict[str, dict] = {}  # site key -> {_fast_key: its calls entry}
_skip_dirs: list[str] = []


def install() -> None:
    if not os.environ.get(PARTS_ENV):
        return
    if "torch" in sys.modules:
        _patch(sys.modules["torch"])
    else:
        sys.meta_path.insert(0, _TorchFinder())
    atexit.register(write_part)
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=_forget)


def _forget() -> None:
    """A forked child records its own calls only."""
    _sites.clear()
    _fast.clear()


class _TorchFinder:
    """Waits for `import torch`, then patches torch.jit once torch is fully imported."""

    def find_spec(self, name, path=None, target=None):
        if name != "torch":
            return None
        import importlib.util

        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        spec.loader = _Loader(spec.loader)
        return spec


class _Loader:
    def __init__(self, loader) -> None:
        self._loader = loader

    def __getattr__(self, name):
        return getattr(self._loader, name)

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module) -> None:
        self._loader.exec_module(module)
        try:
            _patch(module)
        except Exception:
            pass


# --------------------------------------------------------------------------- structure


def describe(value, torch, depth: int = 0) -> dict:
    """Structure of a value: containers, tensors' shape/dtype/device, scalars' type."""
    if depth > 8:
        return {"t": "deep"}
    if isinstance(value, torch.Tensor):
        return {
            "t": "tensor",
            "shape": [int(s) for s in value.shape],
            "dtype": str(value.dtype).replace("torch.", ""),
            "device": value.device.type,
        }
    if value is None or isinstance(value, (bool, int, float, complex, str, bytes)):
        return {"t": type(value).__name__}
    if isinstance(value, (tuple, list)):
        kind = "list" if isinstance(value, list) else "tuple"
        return {"t": kind, "items": [describe(v, torch, depth + 1) for v in value[:64]]}
    if isinstance(value, dict):
        items = {}
        for key, item in list(value.items())[:64]:
            name = key if isinstance(key, str) and key.isidentifier() and len(key) < 64 else None
            items[name or f"<{type(key).__name__}>"] = describe(item, torch, depth + 1)
        return {"t": "dict", "items": items}
    return {"t": "object", "type": _qualname(type(value))}


def tensors_of(desc: dict) -> list[dict]:
    """The tensor leaves of a description, in order."""
    if desc.get("t") == "tensor":
        return [desc]
    items = desc.get("items")
    if isinstance(items, dict):
        items = list(items.values())
    return [leaf for item in items or () for leaf in tensors_of(item)]


def skeleton(desc: dict) -> str:
    """A description's key without sizes: calls that differ only in sizes share it."""

    def strip(d):
        if d.get("t") == "tensor":
            return {**d, "shape": len(d["shape"])}
        if isinstance(d.get("items"), list):
            return {**d, "items": [strip(i) for i in d["items"]]}
        if isinstance(d.get("items"), dict):
            return {**d, "items": {k: strip(v) for k, v in d["items"].items()}}
        return d

    return json.dumps(strip(desc), sort_keys=True)


def _qualname(obj) -> str:
    module = getattr(obj, "__module__", None) or ""
    name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", "?")
    return f"{module}.{name}" if module else name


def captured(obj, torch) -> dict:
    import inspect

    if isinstance(obj, torch.jit.ScriptModule):
        return {"kind": "script_module", "class": _qualname(type(obj))}
    if isinstance(obj, torch.nn.Module):
        return {"kind": "module", "class": _qualname(type(obj))}
    if inspect.ismethod(obj):
        owner = obj.__self__
        cls = owner if inspect.isclass(owner) else type(owner)
        return {"kind": "method", "class": _qualname(cls), "name": obj.__func__.__name__}
    if inspect.isclass(obj):
        return {"kind": "class", "class": _qualname(obj)}
    if callable(obj):
        return {"kind": "function", "name": _qualname(obj)}
    return {"kind": "object", "class": _qualname(type(obj))}


# --------------------------------------------------------------------------- sites


def _caller():
    frame = sys._getframe(2)
    while frame is not None:
        name = os.path.abspath(frame.f_code.co_filename)
        if name != _HERE and not any(name.startswith(d) for d in _skip_dirs):
            return frame, name
        frame = frame.f_back
    return None, None


def _site_of(frame, filename: str, api: str) -> str:
    line = end = frame.f_lineno
    try:
        positions = list(frame.f_code.co_positions())[frame.f_lasti // 2]
        if positions[0] is not None:
            line, end = positions[0], positions[1] or positions[0]
    except Exception:
        pass
    root = os.environ.get(ROOT_ENV, "")
    path = filename
    if root and filename.startswith(root.rstrip(os.sep) + os.sep):
        path = os.path.relpath(filename, root).replace(os.sep, "/")
    key = f"{path}:{line}:{api}"
    if key not in _sites:
        text = "\n".join(linecache.getline(filename, n) for n in range(line, end + 1))
        _sites[key] = {
            "path": path,
            "line": line,
            "end_line": end,
            "digest": line_digest(text),
            "api": api,
            "count": 0,
            "captured": {},
            "examples": {},
            "calls": {},
            "saved": [],
            "loaded": [],
            "saves_of": [],
        }
    return key


def line_digest(text: str) -> str:
    """Digest of a site's source text, blind to whitespace (the scanner computes the same)."""
    return hashlib.sha256(" ".join(text.split()).encode("utf-8")).hexdigest()[:16]


def _busy() -> bool:
    return getattr(_local, "depth", 0) > 0


class _Quiet:
    """Inside a recorded API: the torch calls it makes are not recorded again."""

    def __enter__(self):
        _local.depth = getattr(_local, "depth", 0) + 1

    def __exit__(self, *exc):
        _local.depth -= 1


def _count(table: dict, key: str, value) -> None:
    entry = table.get(key)
    if entry is None:
        if len(table) >= MAX_EXAMPLES:
            return
        table[key] = entry = {"value": value, "count": 0}
    entry["count"] += 1


def _fast_key(value, torch, shapes: list, depth: int = 0):
    """A cheap key for a value's structure without sizes; its tensors' shapes go to `shapes`
    (the same order as tensors_of)."""
    if isinstance(value, torch.Tensor):
        shapes.append(value.shape)
        return (value.dtype, value.device.type, value.dim())
    if isinstance(value, (tuple, list)) and depth < 8:
        return (type(value) is list, tuple(_fast_key(v, torch, shapes, depth + 1) for v in value))
    if isinstance(value, dict) and depth < 8:
        return tuple((k, _fast_key(v, torch, shapes, depth + 1)) for k, v in value.items())
    return type(value)


def _note_call(site_key: str, args, kwargs, torch) -> None:
    tensor = torch.Tensor
    if not kwargs and all(isinstance(a, tensor) for a in args):  # the common call: tensors
        shapes = [a.shape for a in args]
        fast = tuple([(a.dtype, a.device, len(s)) for a, s in zip(args, shapes, strict=True)])
    else:
        shapes = []
        fast = (_fast_key(args, torch, shapes), _fast_key(kwargs, torch, shapes))
    with _lock:
        known = _fast.setdefault(site_key, {})
        entry = known.get(fast)
        if entry is None:
            entry = known[fast] = _call_entry(site_key, args, kwargs, torch)
            if entry is None:
                return
        entry["count"] += 1
        seen = entry["shapes"]
        if len(seen) < MAX_SHAPES:
            joint = [[int(size) for size in shape] for shape in shapes]
            if joint not in seen:
                seen.append(joint)
        for axes, shape in zip(entry["axes"], shapes, strict=True):
            for sizes, size in zip(axes, shape, strict=True):
                if size not in sizes and len(sizes) < MAX_SIZES:
                    sizes.append(int(size))


def _call_entry(site_key: str, args, kwargs, torch) -> dict | None:
    """The aggregate of the calls of this structure (a new signature: described once)."""
    desc = {"args": describe(tuple(args), torch), "kwargs": describe(kwargs, torch)}
    whole = {"t": "tuple", "items": [desc["args"], desc["kwargs"]]}
    key = skeleton(whole)
    calls = _sites[site_key]["calls"]
    if key not in calls:
        if len(calls) >= MAX_SIGNATURES:
            return None
        calls[key] = {
            "args": desc["args"]["items"],
            "kwargs": desc["kwargs"]["items"],
            "count": 0,
            "axes": [[[] for _ in t["shape"]] for t in tensors_of(whole)],
            "shapes": [],
        }
    return calls[key]


def _register(result, site_key: str) -> None:
    import weakref

    try:
        ref = weakref.ref(result)
    except TypeError:
        return
    _results[id(result)] = (site_key, ref)


def _registered(obj) -> str | None:
    entry = _results.get(id(obj))
    if entry is not None and entry[1]() is obj:
        return entry[0]
    return None


def _path_text(f) -> str | None:
    try:
        path = os.fspath(f)
    except TypeError:
        return None  # a buffer: no path to record
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    full = os.path.abspath(path)
    root = os.environ.get(ROOT_ENV, "")
    if root and full.startswith(root.rstrip(os.sep) + os.sep):
        return os.path.relpath(full, root).replace(os.sep, "/")
    return full


# --------------------------------------------------------------------------- patches


def _patch(torch) -> None:
    jit = torch.jit
    if getattr(jit, "_migrate_recorded", False):
        return
    jit._migrate_recorded = True
    _skip_dirs.append(os.path.dirname(os.path.abspath(torch.__file__)) + os.sep)

    def recorded(api: str, original, on_call):
        def wrapper(*args, **kwargs):
            if _busy():
                return original(*args, **kwargs)
            key = None
            try:
                frame, filename = _caller()
                if frame is not None:
                    with _lock:
                        key = _site_of(frame, filename, api)
                        _sites[key]["count"] += 1
                del frame
            except Exception:
                key = None
            with _Quiet():
                result = original(*args, **kwargs)
            if key is not None:
                try:
                    with _lock:
                        on_call(_sites[key], args, kwargs, result)
                    if result is not None and api in _RESULT_APIS:
                        _register(result, key)
                except Exception:
                    pass
            return result

        wrapper.__wrapped__ = original
        wrapper.__name__ = getattr(original, "__name__", api)
        wrapper.__qualname__ = getattr(original, "__qualname__", api)
        wrapper.__doc__ = getattr(original, "__doc__", None)
        return wrapper

    def on_capture(site, args, kwargs, result):
        obj = args[0] if args else kwargs.get("obj", kwargs.get("func"))
        info = captured(obj, torch)
        _count(site["captured"], json.dumps(info, sort_keys=True), info)
        example = args[1] if len(args) > 1 else kwargs.get("example_inputs")
        example_kw = kwargs.get("example_kwarg_inputs")
        if example is not None or example_kw is not None:
            desc = {
                "inputs": describe(example, torch) if example is not None else None,
                "kwarg_inputs": describe(example_kw, torch) if example_kw is not None else None,
            }
            _count(site["examples"], json.dumps(desc, sort_keys=True), desc)

    def on_save(index):
        def note(site, args, kwargs, result):
            target = args[index] if len(args) > index else kwargs.get("f")
            path = _path_text(target)
            if path is not None and path not in site["saved"]:
                site["saved"].append(path)
            module = args[index - 1] if index else None
            producer = _registered(module) if module is not None else None
            if producer is not None and producer not in site["saves_of"]:
                site["saves_of"].append(producer)

        return note

    def on_load(site, args, kwargs, result):
        path = _path_text(args[0] if args else kwargs.get("f"))
        if path is not None and path not in site["loaded"]:
            site["loaded"].append(path)

    jit.script = recorded("torch.jit.script", jit.script, on_capture)
    jit.trace = recorded("torch.jit.trace", jit.trace, on_capture)
    jit.save = recorded("torch.jit.save", jit.save, on_save(1))
    jit.load = recorded("torch.jit.load", jit.load, on_load)
    for cls in {jit.ScriptModule, jit.RecursiveScriptModule}:
        for name, api in (
            ("save", "ScriptModule.save"),
            ("_save_for_lite_interpreter", "ScriptModule._save_for_lite_interpreter"),
        ):
            if name in cls.__dict__:
                setattr(cls, name, recorded(api, cls.__dict__[name], on_save(1)))
    _wrap_calls(jit.ScriptModule, torch)
    try:
        # The recorded program imported torch already: this runs only in its process.
        import torch.jit.mobile as mobile  # noqa: TID251

        lite = recorded("_load_for_lite_interpreter", mobile._load_for_lite_interpreter, on_load)
        mobile._load_for_lite_interpreter = lite
        jit._load_for_lite_interpreter = lite
        _wrap_calls(mobile.LiteScriptModule, torch)
    except Exception:
        pass


_RESULT_APIS = frozenset(
    {"torch.jit.script", "torch.jit.trace", "torch.jit.load", "_load_for_lite_interpreter"}
)


def _wrap_calls(cls, torch) -> None:
    """Calls of a recorded capture's or load's result are described under its site."""
    original = cls.__call__

    def __call__(self, *args, **kwargs):
        if not _busy():
            try:
                key = _registered(self)
                if key is not None:
                    _note_call(key, args, kwargs, torch)
            except Exception:
                pass
        return original(self, *args, **kwargs)

    cls.__call__ = __call__


# --------------------------------------------------------------------------- output


def part_payload() -> dict:
    with _lock:
        sites = []
        for site in _sites.values():
            sites.append(
                {
                    **site,
                    "captured": list(site["captured"].values()),
                    "examples": list(site["examples"].values()),
                    "calls": list(site["calls"].values()),
                }
            )
    return {"pid": os.getpid(), "time": time.time(), "sites": sites}


def write_part() -> None:
    folder = os.environ.get(PARTS_ENV)
    if not folder or not _sites:
        return
    try:
        data = json.dumps(part_payload())
        name = os.path.join(folder, f"part-{os.getpid()}-{time.monotonic_ns()}.json")
        tmp = name + ".tmp"
        with open(tmp, "w", encoding="utf-8") as handle:
            handle.write(data)
        os.replace(tmp, name)
    except Exception:
        pass
