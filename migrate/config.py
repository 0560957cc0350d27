"""[tool.migrate] in the scanned project's pyproject.toml; command-line flags win over it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomllib

CUDA_TARGETS = ("13.0", "13.2")
FORMATS = ("text", "json", "sarif", "github")
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
    verify: dict[str, Any] = field(default_factory=dict)


def find_pyproject(paths: list[str]) -> Path | None:
    """The closest pyproject.toml with a [tool.migrate] table, walking up from the first path."""
    start = Path(paths[0] if paths else ".").resolve()
    if not start.is_dir():
        start = start.parent
    for folder in (start, *start.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            try:
                data = tomllib.loads(candidate.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
                continue
            if "migrate" in data.get("tool", {}):
                return candidate
    return None


def _str_list(where: str, key: str, value: Any) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: `{key}` must be a list of strings")
    return value


def load_config(path: Path) -> Config:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    table = data.get("tool", {}).get("migrate", {})
    where = f"{path} [tool.migrate]"
    if not isinstance(table, dict):
        raise ConfigError(f"{where}: must be a table")
    config = Config(path=path)
    for key, value in table.items():
        if key == "select":
            config.select = _str_list(where, key, value)
        elif key == "ignore":
            config.ignore = _str_list(where, key, value)
        elif key in ("exclude", "extend-exclude"):
            config.exclude.extend(_str_list(where, key, value))
        elif key == "per-file-ignores":
            if not isinstance(value, dict):
                raise ConfigError(f"{where}: `per-file-ignores` must be a table of glob = [codes]")
            config.per_file_ignores = {
                glob: _str_list(where, f"per-file-ignores.{glob}", codes)
                for glob, codes in value.items()
            }
        elif key == "cuda":
            if not isinstance(value, str) or value not in CUDA_TARGETS:
                raise ConfigError(f"{where}: `cuda` must be one of {', '.join(CUDA_TARGETS)}")
            config.cuda = value
        elif key == "format":
            if value not in FORMATS:
                raise ConfigError(f"{where}: `format` must be one of {', '.join(FORMATS)}")
            config.format = value
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
        else:
            raise ConfigError(f"{where}: unknown key `{key}`")
    from migrate.registry import unknown_codes

    for key, codes in (("select", config.select or []), ("ignore", config.ignore)):
        bad = unknown_codes(codes)
        if bad:
            raise ConfigError(f"{where}: `{key}` names unknown rule {', '.join(bad)}")
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
