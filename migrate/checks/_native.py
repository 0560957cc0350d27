"""The base of the MIG4xx checks (serving code outside Python): picks files by language,
tokenizes once per file (migrate.analysis.native_source) and reports the archive names a
file mentions.
"""

from __future__ import annotations

import functools
from pathlib import PurePosixPath
from typing import ClassVar

from migrate.analysis.native_source import C, Token, archive_names, cached_tokens, language
from migrate.checks.base import FileContext, TextCheck
from migrate.findings import Finding


class NativeCheck(TextCheck):
    """A MIG4xx check: picks files by language, tokenizes once per file, reports manual
    findings carrying the archive names the file mentions (for the Python link)."""

    languages: ClassVar[frozenset[str]] = frozenset()

    def applies_to(self, path: PurePosixPath) -> bool:
        return language(path) in self.languages

    def check(self, ctx: FileContext) -> None:
        lang = language(ctx.posix)
        if lang is None:
            return
        tokens = cached_tokens(ctx.text, lang)
        self.scan(ctx, tokens, lang)

    def scan(self, ctx: FileContext, tokens: list[Token], lang: str) -> None:  # pragma: no cover
        raise NotImplementedError

    def report(
        self, ctx: FileContext, start: int, end: int, message: str, symbol: str, **data: object
    ) -> Finding:
        archives = _file_archives(ctx.text, language(ctx.posix) or C)
        return ctx.add(self.rule, start, end, message, symbol=symbol, archives=archives, **data)


@functools.lru_cache(maxsize=8)
def _file_archives(text: str, lang: str) -> tuple[str, ...]:
    return archive_names(cached_tokens(text, lang))
