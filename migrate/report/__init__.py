"""Reporters read findings and render them; they never change anything."""

from __future__ import annotations

from migrate.report import github, json_report, sarif, text

FORMATS = {
    "text": text.render,
    "json": json_report.render,
    "sarif": sarif.render,
    "github": github.render,
}
