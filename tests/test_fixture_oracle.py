"""Every runnable rule fixture pair executes: before (under TorchScript where it scripts or
traces) and after agree on the same inputs. See tests/fixture_oracle.py for the sidecar format."""

from __future__ import annotations

import pytest

from tests.fixture_cases import check_behaviour_before_update
from tests.fixture_oracle import (
    KNOWN_DEFECTS,
    TEXT_ONLY,
    KnownDefect,
    OracleError,
    check_pair,
    oracle_path,
    python_pairs,
    text_pairs,
)

pytest.importorskip("torch")

PAIRS = python_pairs()
RUNNABLE = [c for c in PAIRS if oracle_path(c).exists()]
#: The share of Python fixture pairs that must execute (issue 11).
FLOOR = 0.8


def _param(case):
    known = KNOWN_DEFECTS.get(str(case))
    if not known:
        return pytest.param(case, id=str(case))
    reason = "; ".join(f"{label}: {why}" for label, why in known.items())
    return pytest.param(
        case, id=str(case), marks=pytest.mark.xfail(strict=True, raises=KnownDefect, reason=reason)
    )


@pytest.mark.parametrize("case", [_param(c) for c in RUNNABLE])
def test_before_and_after_agree(case, tmp_path):
    assert check_pair(case, tmp_path)


def test_every_pair_runs_or_says_why():
    names = {str(c) for c in PAIRS}
    for case in PAIRS:
        runs, listed = oracle_path(case).exists(), str(case) in TEXT_ONLY
        assert runs != listed, f"{case}: needs a .oracle.py sidecar or a TEXT_ONLY reason"
    assert set(TEXT_ONLY) <= names, set(TEXT_ONLY) - names
    assert set(KNOWN_DEFECTS) <= {str(c) for c in RUNNABLE}, set(KNOWN_DEFECTS) - names


def test_executed_share(capsys):
    executed, config = len(RUNNABLE), len(text_pairs())
    share = executed / len(PAIRS)
    with capsys.disabled():
        print(
            f"\nfixture oracle: {executed}/{len(PAIRS)} Python pairs executed ({share:.0%}); "
            f"text-only: {len(TEXT_ONLY)} Python ({', '.join(sorted(TEXT_ONLY))}) "
            f"+ {config} configuration pairs (MIG3xx files, nothing to run); "
            f"known defects: {len(KNOWN_DEFECTS)} pairs"
        )
    assert share >= FLOOR, f"only {share:.0%} of fixture pairs execute (floor {FLOOR:.0%})"


def test_a_changed_result_is_caught(tmp_path):
    """The oracle can fail: an after that computes something else disagrees."""
    (case,) = [c for c in RUNNABLE if str(c) == "MIG111/annotate"]
    wrong = tmp_path / "annotate.after.py"
    wrong.write_text(case.sibling("after").read_text().replace("total = 1 +", "total = 2 +"))
    with pytest.raises(OracleError, match="collect"):
        check_pair(case, tmp_path / "run", after=wrong)
    # MIGRATE_UPDATE=1 refuses to write such an after as the new snapshot.
    with pytest.raises(OracleError, match="collect"):
        check_behaviour_before_update(case, wrong.read_text())
