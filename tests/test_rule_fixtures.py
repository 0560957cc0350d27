"""One parametrized test per fixture case under fixtures/rules/ (see tests/fixture_cases.py)."""

import pytest

from tests.fixture_cases import all_cases, run_case

CASES = all_cases()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_rule_fixture(case):
    run_case(case)
