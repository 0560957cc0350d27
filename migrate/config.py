"""[tool.migrate] in the scanned project's pyproject.toml; command-line flags win over it."""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomllib

from migrate.safe_read import DEFAULT_MAX_FILE_SIZE, Skipped, read_checked, size_text

CUDA_TARGETS = ("13.0", "13.2")
FORMATS = ("text", "json", "sarif", "github")
# What the repository wants from the migration (docs/planner.md, Migration intent).
INTENTS = ("drop", "keep-scriptable")
SCRIPTED_FUNCTIONS = ("eager", "compile")
KNOWN_KEYS = (
    "select",
    "ignore",
    "exclude",
    "extend-exclude",
    "per-file-ignores",
    "cuda",
    "format",
    "unsafe-fixes",
    "verify",
    "test",
    "test-timeout",
    "max-file-size",
    "intent",
    "scripted-functions",
)
VERIFY_KEYS = {"rtol": float, "atol": float, "samples": int, "seed": int, "device": str}

# Bounds of the numbers a scanned repository's file may set (issue 29): a checkout must not
# start an endless verify, nor a test run that never times out.
MAX_TEST_TIMEOUT = 24 * 3600.0  # seconds
MAX_FILE_SIZE = 256 * 1024 * 1024
MIN_FILE_SIZE = 1024
VERIFY_BOUNDS: dict[str, tuple[float, float]] = {
    "samples": (0, 1000),
    "seed": (0, 2**32 - 1),
    "rtol": (0.0, 1.0),
    "atol": (0.0, 1e6),
}
VERIFY_DEVICE = re.compile(r"(auto|cpu|(cuda|mps|xpu)(:\d{1,3})?)")
_SIZE = re.compile(r"\s*(\d+)\s*(|b|kib|kb|k|mib|mb|m|gib|gb|g)\s*", re.IGNORECASE)
_UNITS = {"": 1, "b": 1, "k": 1024, "m": 1024**2, "g": 1024**3}


class ConfigError(Exception):
    """A bad [tool.migrate] table: the message names the file and the key."""


@dataclass
class Config:
    path: Path | None = None
    select: list[str] | None = None
    ignore: list[str] = field(default_factory=list)
    exclude: list[str] = field(default_factory=list)
    per_file_ignores: dict[str, list[str]] = field(default_factory=dict)
    cuda: str = "13.0"
    format: str = "text"
    unsafe_fixes: bool = False
    verify: dict[str, Any] = field(default_factory=dict)
    test: str | None = None  # apply --test-from-config runs it; never run otherwise
    test_timeout: float | None = None
    max_file_size: int = DEFAULT_MAX_FILE_SIZE
    intent: str | None = None  # None: decide per site (today's behaviour)
    scripted_functions: str = "eager"


def find_pyproject(paths: list[str]) -> Path | None:
    """The closest pyproject.toml with a [tool.migrate] table, walking up from the first path."""
    # realpath, not resolve(): a symlink loop named first is reported by the scan, not here.
    start = Path(os.path.realpath(paths[0] if paths else "."))
    if not start.is_dir():
        start = start.parent
    for folder in (start, *start.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            try:
                data_bytes = read_checked(candidate)
            except Skipped as exc:
                raise ConfigError(f"{candidate}: {exc}; not read") from None
            except OSError:
                continue
            try:
                text = data_bytes.decode("utf-8")
            except UnicodeDecodeError as exc:
                # As for invalid TOML: our table in a file we cannot read is an error.
                if b"tool.migrate" in data_bytes:
                    raise ConfigError(
                        f"{candidate}: not UTF-8 (byte {exc.start}: {exc.reason}); "
                        "TOML files must be UTF-8"
                    ) from None
                continue
            try:
                data = tomllib.loads(text)
            except tomllib.TOMLDecodeError as exc:
                # A broken file that holds our table must not be skipped silently.
                if "tool.migrate" in text:
                    raise ConfigError(f"{candidate}: invalid TOML: {exc}") from None
                continue
            tool = data.get("tool")
            if isinstance(tool, dict) and "migrate" in tool:
                return candidate
    return None


def _anchor_excludes(patterns: list[str], base: Path) -> list[str]:
    """Patterns with a folder part are relative to the pyproject's folder, like ruff's."""
    out = []
    for pattern in patterns:
        if "/" in pattern.rstrip("/") and not pattern.startswith(("/", "**/", "*")):
            out.append((base / pattern).as_posix())
        else:
            out.append(pattern)
    return out


def _str_list(where: str, key: str, value: Any) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: `{key}` must be a list of strings")
    return value


def _codes(where: str, key: str, value: Any) -> list[str]:
    from migrate.registry import unknown_codes

    codes = _str_list(where, key, value)
    bad = unknown_codes(codes)
    if bad:
        raise ConfigError(f"{where}: `{key}` names unknown rule {', '.join(bad)}")
    return codes


def _number(where: str, key: str, value: Any, low: float, high: float, kind: type) -> Any:
    """A number of `kind` within [low, high] (NaN and infinities refused), else a one-line
    ConfigError naming the key and the range."""
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if not isinstance(value, kind) or isinstance(value, bool):
        raise ConfigError(f"{where}: `{key}` must be a{'n' * (kind is int)} {kind.__name__}")
    if not (math.isfinite(value) and low <= value <= high):
        raise ConfigError(f"{where}: `{key}` must be from {low:g} to {high:g}, not {value!r}")
    return value


def _file_size(where: str, value: Any) -> int:
    """max-file-size: bytes (an integer) or a string with a unit ("8 MiB", "512KiB")."""
    size = None
    if isinstance(value, int) and not isinstance(value, bool):
        size = value
    elif isinstance(value, str):
        match = _SIZE.fullmatch(value)
        if match:
            size = int(match.group(1)) * _UNITS[match.group(2)[:1].lower()]
    if size is None:
        raise ConfigError(
            f'{where}: `max-file-size` must be bytes or a size such as "8 MiB", not {value!r}'
        )
    if not MIN_FILE_SIZE <= size <= MAX_FILE_SIZE:
        raise ConfigError(
            f"{where}: `max-file-size` must be from 1 KiB to {size_text(MAX_FILE_SIZE)}, not {value!r}"
        )
    return size


def load_config(path: Path) -> Config:
    try:
        data = tomllib.loads(read_checked(path).decode("utf-8"))
    except Skipped as exc:
        raise ConfigError(f"{path}: {exc}; not read") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    tool = data.get("tool", {})
    table = tool.get("migrate", {}) if isinstance(tool, dict) else {}
    where = f"{path} [tool.migrate]"
    if not isinstance(table, dict):
        raise ConfigError(f"{where}: must be a table")
    config = Config(path=path)
    for key, value in table.items():
        if key == "select":
            config.select = _codes(where, key, value)
            if not config.select:  # select_codes reads an empty selection as "every rule"
                raise ConfigError(f"{where}: `select` is empty; name rules or prefixes (MIG1)")
        elif key == "ignore":
            config.ignore = _codes(where, key, value)
        elif key in ("exclude", "extend-exclude"):
            config.exclude.extend(
                _anchor_excludes(_str_list(where, key, value), path.resolve().parent)
            )
        elif key == "per-file-ignores":
            if not isinstance(value, dict):
                raise ConfigError(f"{where}: `per-file-ignores` must be a table of glob = [codes]")
            config.per_file_ignores = {
                glob: _codes(where, f"per-file-ignores.{glob}", codes)
                for glob, codes in value.items()
            }
        elif key == "cuda":
            choices = " or ".join(f'"{t}"' for t in CUDA_TARGETS)
            if not isinstance(value, str):
                # cuda = 13.0 parses as a float: say so rather than "must be one of 13.0".
                raise ConfigError(
                    f"{where}: `cuda` must be a string ({choices}), not {type(value).__name__}"
                )
            if value not in CUDA_TARGETS:
                raise ConfigError(f"{where}: `cuda` must be {choices}, not {value!r}")
            config.cuda = value
        elif key == "format":
            if not isinstance(value, str) or value not in FORMATS:
                raise ConfigError(
                    f"{where}: `format` must be one of {', '.join(FORMATS)}, not {value!r}"
                )
            config.format = value
        elif key == "unsafe-fixes":
            if not isinstance(value, bool):
                raise ConfigError(f"{where}: `unsafe-fixes` must be true or false, not {value!r}")
            config.unsafe_fixes = value
        elif key == "verify":
            if not isinstance(value, dict):
                raise ConfigError(f"{where}: `verify` must be a table")
            for vkey, vvalue in value.items():
                expected = VERIFY_KEYS.get(vkey)
                if expected is None:
                    raise ConfigError(f"{where}: unknown key `verify.{vkey}`")
                name = f"verify.{vkey}"
                if vkey in VERIFY_BOUNDS:
                    vvalue = _number(where, name, vvalue, *VERIFY_BOUNDS[vkey], expected)
                elif not isinstance(vvalue, str) or not VERIFY_DEVICE.fullmatch(vvalue.lower()):
                    raise ConfigError(
                        f"{where}: `{name}` must be auto, cpu, cuda[:N], mps or xpu[:N], "
                        f"not {vvalue!r}"
                    )
                config.verify[vkey] = vvalue
        elif key == "test":
            if not isinstance(value, str) or not value.strip():
                raise ConfigError(f"{where}: `test` must be a command line (a string)")
            config.test = value
        elif key == "test-timeout":
            if (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or not 0 < value <= MAX_TEST_TIMEOUT  # NaN fails both comparisons
            ):
                raise ConfigError(
                    f"{where}: `test-timeout` must be a number of seconds above 0 and at most "
                    f"{MAX_TEST_TIMEOUT:g}, not {value!r}"
                )
            config.test_timeout = float(value)
        elif key == "max-file-size":
            config.max_file_size = _file_size(where, value)
        elif key in ("intent", "scripted-functions"):
            choices = INTENTS if key == "intent" else SCRIPTED_FUNCTIONS
            if not isinstance(value, str) or value not in choices:
                said = " or ".join(f'"{c}"' for c in choices)
                raise ConfigError(f"{where}: `{key}` must be {said}, not {value!r}")
            setattr(config, key.replace("-", "_"), value)
        else:
            raise ConfigError(
                f"{where}: unknown key `{key}` (known: {', '.join(sorted(KNOWN_KEYS))})"
            )
    return config


def resolve_config(paths: list[str], config_file: str | None, isolated: bool) -> Config:
    if isolated:
        return Config()
    path = Path(config_file) if config_file else find_pyproject(paths)
    if path is None:
        return Config()
    if not path.is_file():
        raise ConfigError(f"{path}: no such config file")
    return load_config(path)
