"""One module per rule: migNNN_<slug>.py holds the check (and its fix) for rules/MIGNNN.yaml."""

from __future__ import annotations

import functools
import importlib
import pkgutil


@functools.lru_cache(maxsize=1)
def check_classes() -> dict[str, type]:
    """Import every module of migrate.checks and index its Check subclasses by code."""
    from migrate.checks.base import Check

    found: dict[str, type] = {}
    for info in pkgutil.iter_modules(__path__):
        if not info.name.startswith("mig"):
            continue
        module = importlib.import_module(f"migrate.checks.{info.name}")
        for obj in vars(module).values():
            if isinstance(obj, type) and issubclass(obj, Check) and getattr(obj, "code", None):
                if obj.__module__ != module.__name__:
                    continue
                if obj.code in found:
                    raise ValueError(f"duplicate check for {obj.code}")
                found[obj.code] = obj
    return found
