"""--select/--ignore interact with the catch-all rules the way a ruff user expects."""

from migrate.registry import select_codes
from migrate.scan.file_analysis import check_source

SOURCE = "import torch\nm = torch.jit.trace(a, b)\nname = torch.jit.__name__\n"


def test_ignored_rule_does_not_fall_through_to_catch_all():
    codes = select_codes(None, ["MIG102"])
    assert "MIG120" in codes and "MIG119" in codes
    assert check_source(SOURCE, codes) == []


def test_specific_rule_still_reports_when_enabled():
    findings = check_source(SOURCE, select_codes(None, None))
    assert [(f.line, f.rule, f.symbol) for f in findings] == [(2, "MIG102", "torch.jit.trace")]


def test_dunder_attribute_is_not_private_api():
    assert check_source("import torch\nprint(torch.jit.__file__)\n", ["MIG119", "MIG120"]) == []
