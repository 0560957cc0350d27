"""Checking an evidence file against its JSON Schema (evidence.schema.json) before anything
reads it: an evidence file comes with the tree, and its values become generated code.

A small validator for the part of JSON Schema that file uses (type, const, enum, required,
properties, additionalProperties, propertyNames, items, $ref, anyOf, oneOf, minimum,
maximum, maxItems, maxProperties, maxLength, pattern): the `jsonschema` package is only a
test dependency. The first violation is answered as one line: where in the file, and why.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from typing import Any

SCHEMA = Path(__file__).with_name("evidence.schema.json")
MAX_DEPTH = 64  # the recorder writes at most about 25 levels (values nest 8 deep)

_TYPES: dict[str, tuple[str, Any]] = {
    "object": ("an object", lambda v: isinstance(v, dict)),
    "array": ("a list", lambda v: isinstance(v, list)),
    "string": ("a string", lambda v: isinstance(v, str)),
    "integer": ("an integer", lambda v: isinstance(v, int) and not isinstance(v, bool)),
    "number": (
        "a number",
        lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    ),
    "boolean": ("true or false", lambda v: isinstance(v, bool)),
    "null": ("null", lambda v: v is None),
}


class Invalid(ValueError):
    """Where in the document (`sites[0].line`) and why."""

    def __init__(self, where: str, why: str) -> None:
        self.where, self.why = where, why
        super().__init__(f"{where}: {why}" if where else why)


@functools.lru_cache(maxsize=1)
def schema() -> dict:
    return json.loads(SCHEMA.read_text(encoding="utf-8"))


def validate(document: Any) -> None:
    """Invalid for the first place where `document` breaks the evidence schema."""
    _check_depth(document)
    _Validator(schema()).check(document, schema(), "")


def _check_depth(document: Any) -> None:
    """Nesting is bounded before any recursive walk (the validator's and the readers')."""
    level = [document]
    for _ in range(MAX_DEPTH + 1):
        level = [
            child
            for value in level
            if isinstance(value, (dict, list))
            for child in (value.values() if isinstance(value, dict) else value)
        ]
        if not level:
            return
    raise Invalid("", f"nested too deeply (more than {MAX_DEPTH} levels)")


def shown(value: Any, limit: int = 40) -> str:
    """A value as JSON, cut short: for a message, never the whole of a hostile string."""
    text = json.dumps(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _key(where: str, key: str) -> str:
    if key.isidentifier():
        return f"{where}.{key}" if where else key
    return f"{where}[{shown(key)}]"


class _Validator:
    def __init__(self, root: dict) -> None:
        self.root = root

    def resolve(self, ref: str) -> dict:
        node: Any = self.root
        for part in ref.removeprefix("#/").split("/"):
            node = node[part]
        return node

    def check(self, value: Any, rule: dict, where: str) -> None:
        if "$ref" in rule:
            self.check(value, self.resolve(rule["$ref"]), where)
        for keyword in ("oneOf", "anyOf"):
            if keyword in rule:
                self.one_of(value, rule[keyword], where)
        if "type" in rule:
            name, test = _TYPES[rule["type"]]
            if not test(value):
                raise Invalid(where, f"expected {name}, not {shown(value)}")
        if "const" in rule and value != rule["const"]:
            raise Invalid(where, f"expected {shown(rule['const'])}, not {shown(value)}")
        if "enum" in rule and value not in rule["enum"]:
            choices = ", ".join(shown(c) for c in rule["enum"])
            raise Invalid(where, f"expected one of {choices}; not {shown(value)}")
        if isinstance(value, dict):
            self.object(value, rule, where)
        elif isinstance(value, list):
            self.array(value, rule, where)
        elif isinstance(value, str):
            self.string(value, rule, where)
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            if "minimum" in rule and value < rule["minimum"]:
                raise Invalid(where, f"must be at least {rule['minimum']}, not {shown(value)}")
            if "maximum" in rule and value > rule["maximum"]:
                raise Invalid(where, f"must be at most {rule['maximum']}, not {shown(value)}")

    def one_of(self, value: Any, choices: list[dict], where: str) -> None:
        """Values are told apart by their type and their `t` (the schema's only choices):
        the choice those select decides, and its violation is the one reported."""
        fitting = [c for c in choices if self.selects(value, c)]
        if len(fitting) == 1:
            self.check(value, fitting[0], where)
            return
        for choice in fitting:
            try:
                self.check(value, choice, where)
                return
            except Invalid:
                continue
        kind = value.get("t") if isinstance(value, dict) else None
        what = f"`t` {shown(kind)}" if kind is not None else shown(value)
        raise Invalid(where, f"not a value this file can hold ({what})")

    def selects(self, value: Any, rule: dict) -> bool:
        rule = self.resolve(rule["$ref"]) if "$ref" in rule else rule
        if "type" in rule and not _TYPES[rule["type"]][1](value):
            return False
        tag = rule.get("properties", {}).get("t")
        if tag is not None and isinstance(value, dict):
            allowed = [tag["const"]] if "const" in tag else tag.get("enum", [])
            return value.get("t") in allowed
        return True

    def object(self, value: dict, rule: dict, where: str) -> None:
        if "maxProperties" in rule and len(value) > rule["maxProperties"]:
            raise Invalid(where, f"more than {rule['maxProperties']} keys")
        for key in rule.get("required", ()):
            if key not in value:
                raise Invalid(where, f"missing key `{key}`")
        properties = rule.get("properties", {})
        extra = rule.get("additionalProperties", True)
        names = rule.get("propertyNames")
        for key, item in value.items():
            if names is not None:
                self.check(key, names, _key(where, key))
            if key in properties:
                self.check(item, properties[key], _key(where, key))
            elif extra is False:
                raise Invalid(where, f"unknown key {shown(key)}")
            elif isinstance(extra, dict):
                self.check(item, extra, _key(where, key))

    def array(self, value: list, rule: dict, where: str) -> None:
        if "maxItems" in rule and len(value) > rule["maxItems"]:
            raise Invalid(where, f"more than {rule['maxItems']} items")
        if "items" in rule:
            for index, item in enumerate(value):
                self.check(item, rule["items"], f"{where}[{index}]")

    def string(self, value: str, rule: dict, where: str) -> None:
        if "maxLength" in rule and len(value) > rule["maxLength"]:
            raise Invalid(where, f"longer than {rule['maxLength']} characters")
        if "pattern" in rule and not re.search(rule["pattern"], value):
            raise Invalid(where, f"not a value this file can hold ({shown(value)})")
