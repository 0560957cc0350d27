"""Rule documentation rendered from rules/*.yaml (migrate explain, docs/rules.md)."""

from __future__ import annotations

from migrate.registry import Rule


def render_rule(rule: Rule) -> str:
    parts = [f"# {rule.code} {rule.name}", "", rule.title, "", f"Fix: {rule.fix.value}", ""]
    for heading, body in (
        ("What it does", rule.what),
        ("Why", rule.why),
        ("Use instead", rule.use_instead),
        ("Fix safety", rule.fix_safety),
    ):
        if body:
            parts += [f"## {heading}", body, ""]
    if rule.example_before:
        parts += ["## Example", "```python", rule.example_before, "```", ""]
        if rule.example_after:
            parts += ["Becomes:", "```python", rule.example_after, "```", ""]
    return "\n".join(parts).rstrip() + "\n"
