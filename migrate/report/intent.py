"""The migration intent, and the evidence read, as every report shows them (docs/planner.md,
Migration intent)."""

from __future__ import annotations

from migrate.findings import ScanResult
from migrate.printable import printable

MEANING = {
    "drop": "the repository drops TorchScript: every construct migrates in this run",
    "keep-scriptable": "TorchScript keeps working: only what warns in torch 2.13 changes",
    None: "none: each site is decided alone",
}


def shown(result: ScanResult) -> bool:
    """An intent was chosen, or the findings are TorchScript ones it would change."""
    return result.intent is not None or result.unlocks is not None


def intent_line(result: ScanResult) -> str:
    """`Intent: drop (...)`, or without one what each intent would write (or how to ask)."""
    line = f"Intent: {MEANING[result.intent]}"
    if result.intent is None and result.unlocks == {}:
        return f"{line}; `--compare-intents` counts the fixes each intent would write."
    if result.intent is None and result.unlocks:
        now = result.unlocks.get("none", 0)
        parts = []
        for name in ("drop", "keep-scriptable"):
            if name in result.unlocks:
                count = result.unlocks[name]
                parts.append(f"`--intent {name}` {count} ({count - now:+d})")
        line += f" ({now} fixes); " + ", ".join(parts)
    return line + "."


def intent_summary(result: ScanResult) -> dict:
    """JSON `summary.intent` and SARIF run properties: the intent and, without one and with
    `--compare-intents`, the fixes (safe + unsafe) each intent would write."""
    out: dict = {"intent": result.intent}
    if result.unlocks:  # compared (`--compare-intents`)
        out["fixes_by_intent"] = dict(result.unlocks)
    return out


def evidence_line(result: ScanResult) -> str | None:
    """Which evidence file the findings used, when one was read (README "migrate record")."""
    if result.evidence is None:
        return None
    return printable(f"Evidence: {result.evidence} (what `migrate record` saw)")
