"""[tool.migrate] in the scanned project's pyproject.toml; command-line flags win over it."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomllib

CUDA_TARGETS = ("13.0", "13.2")
FORMATS = ("text", "json", "sarif", "github")
# What the repository wants from the migration (README "Migration intent").
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
    "intent",
    "scripted-functions",
)
VERIFY_KEYS = {"rtol": float, "atol": float, "samples": int, "seed": int, "device": str}


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
    test: str | None = None  # apply --test
    test_timeout: float | None = None
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
                data_bytes = candidate.read_bytes()
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


def load_config(path: Path) -> Config:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
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
                if expected is float and isinstance(vvalue, int) and not isinstance(vvalue, bool):
                    vvalue = float(vvalue)
                if not isinstance(vvalue, expected) or isinstance(vvalue, bool):
                    raise ConfigError(f"{where}: `verify.{vkey}` must be a {expected.__name__}")
                config.verify[vkey] = vvalue
        elif key == "test":
            if not isinstance(value, str) or not value.strip():
                raise ConfigError(f"{where}: `test` must be a command line (a string)")
            config.test = value
        elif key == "test-timeout":
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                raise ConfigError(f"{where}: `test-timeout` must be a number of seconds above 0")
            config.test_timeout = float(value)
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
