"""A parsed file's tree must be freed when its analysis ends, by reference counting. The
scan raises the cycle collector's thresholds (trees hold no cycles); a reference cycle that
holds a tree (a walker keeping bound methods of itself did) would keep every tree of a scan
alive until a rare full collection, which cost a fifth of a cold scan of real code."""

from __future__ import annotations

import ast
import gc
from pathlib import Path

from migrate.pipeline.scan import PlannedScanner as Scanner
from migrate.scan.engine import ScanOptions

ROOT = Path(__file__).resolve().parent.parent


def test_a_scan_leaves_no_syntax_tree_to_the_cycle_collector():
    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        result = Scanner(ScanOptions(cache=False, jobs=1)).scan([ROOT / "fixtures" / "repos"])
        gc.collect()
        stranded = [o for o in gc.garbage if isinstance(o, ast.AST)]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        if was_enabled:
            gc.enable()
    assert result.files_parsed > 50  # the scan parsed and analysed real sample code
    assert stranded == [], f"{len(stranded)} AST nodes were only freed by the cycle collector"
