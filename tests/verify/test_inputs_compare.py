"""Unit tests: shape specs, dynamic dims, sample generation, comparison and tolerances."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("executorch")

from migrate.verify import VerifyError  # noqa: E402
from migrate.verify.compare import Tolerance, compare_outputs, flatten  # noqa: E402
from migrate.verify.inputs import (  # noqa: E402
    DynamicDim,
    TensorSpec,
    iter_samples,
    parse_dynamic_dims,
    parse_shape_spec,
)

pytestmark = pytest.mark.verify


def test_parse_shape_specs():
    assert parse_shape_spec("1x3x224x224:float32") == TensorSpec((1, 3, 224, 224), torch.float32)
    assert parse_shape_spec("2x7") == TensorSpec((2, 7), torch.float32)
    assert parse_shape_spec("2x7:int64:0..20") == TensorSpec((2, 7), torch.int64, 0.0, 20.0)
    assert parse_shape_spec("scalar:bf16") == TensorSpec((), torch.bfloat16)
    assert parse_shape_spec("int=3") == 3
    assert parse_shape_spec("bool=true") is True
    assert parse_shape_spec("float=0.5") == 0.5


@pytest.mark.parametrize(
    "bad", ["1x3x", "1,3,224", "1x3:floaty", "x3", "2x2:int64:5..1", "bool=maybe", ""]
)
def test_malformed_shape_specs(bad):
    with pytest.raises(VerifyError) as err:
        parse_shape_spec(bad)
    assert err.value.stage == "usage"
    assert "malformed input spec" in err.value.message


def test_parse_dynamic_dims():
    assert parse_dynamic_dims(["0:1:64"]) == [DynamicDim(0, 0, 1, 64)]
    assert parse_dynamic_dims(["1:2:3:9"]) == [DynamicDim(1, 2, 3, 9)]
    for bad in ("0:1", "a:1:2", "0:9:1"):
        with pytest.raises(VerifyError):
            parse_dynamic_dims([bad])


def test_samples_are_seeded_and_keep_dtypes_and_int_range():
    example = (torch.randn(2, 3), torch.tensor([[5, 9], [7, 6]]), 3, True)
    a = list(iter_samples(example, 4, seed=7))
    b = list(iter_samples(example, 4, seed=7))
    c = list(iter_samples(example, 4, seed=8))
    assert [s.name for s in a] == ["example", "random[0]", "random[1]", "random[2]", "random[3]"]
    assert a[0].args is not None and torch.equal(a[0].args[0], example[0])
    for s1, s2, s3 in zip(a[1:], b[1:], c[1:], strict=True):
        assert torch.equal(s1.args[0], s2.args[0])
        assert not torch.equal(s1.args[0], s3.args[0])
        x, ids, scale, flag = s1.args
        assert x.shape == (2, 3) and x.dtype == torch.float32
        assert ids.dtype == torch.int64 and ids.shape == (2, 2)
        assert int(ids.min()) >= 5 and int(ids.max()) <= 9
        assert scale == 3 and flag is True


def test_samples_cover_dynamic_sizes():
    example = (torch.randn(4, 3),)
    samples = list(iter_samples(example, 1, 0, [DynamicDim(0, 0, 1, 16)]))
    sizes = [s.args[0].shape[0] for s in samples]
    assert sizes == [4, 4, 1, 8, 16]
    assert samples[-1].meta == {"kind": "dynamic", "input": 0, "dim": 0, "size": 16}


def test_flatten_names_nested_leaves():
    out = {"logits": torch.zeros(2), "aux": (torch.ones(1), [torch.ones(1)])}
    assert [n for n, _ in flatten(out)] == [
        "output['logits']",
        "output['aux'][0]",
        "output['aux'][1][0]",
    ]


def test_float_tolerance_by_dtype_and_worst_index():
    ref = torch.zeros(3, 4)
    cand = ref.clone()
    cand[1, 2] = 3e-6  # within float32 atol 1e-5
    (leaf,) = compare_outputs(ref, cand, Tolerance())
    assert leaf.passed and leaf.max_abs == pytest.approx(3e-6) and leaf.worst_index == [1, 2]
    cand[2, 3] = 1e-3
    (leaf,) = compare_outputs(ref, cand, Tolerance())
    assert not leaf.passed
    assert leaf.worst_index == [2, 3]
    assert leaf.max_abs == pytest.approx(1e-3)
    assert math.isinf(leaf.max_rel)  # reference is zero there
    (leaf,) = compare_outputs(ref, cand, Tolerance(atol=1e-2))
    assert leaf.passed and leaf.atol == 1e-2
    # float16 is looser by default than float32
    (leaf,) = compare_outputs(ref.half() + 1, (cand + 1).half(), Tolerance())
    assert leaf.rtol == 1e-3


def test_integers_and_bools_are_exact_even_with_overrides():
    ref = (torch.tensor([1, 2, 3]), torch.tensor([True, False]), 4)
    same = compare_outputs(
        ref, (torch.tensor([1, 2, 3]), torch.tensor([True, False]), 4), Tolerance(atol=10)
    )
    assert all(leaf.passed for leaf in same)
    off = compare_outputs(
        ref, (torch.tensor([1, 2, 4]), torch.tensor([True, True]), 5), Tolerance(atol=10)
    )
    assert [leaf.passed for leaf in off] == [False, False, False]
    assert off[0].worst_index == [2] and off[0].max_abs == 1.0
    assert off[1].worst_index == [1]


def test_backend_tolerance_and_structure_mismatch():
    ref = torch.full((5,), 100.0)
    cand = ref + 5e-4
    (plain,) = compare_outputs(ref, cand, Tolerance())
    (xnn,) = compare_outputs(ref, cand, Tolerance(), backend="xnnpack")
    assert not plain.passed and xnn.passed  # a delegate may differ by a few ulps
    (bad,) = compare_outputs((ref, ref), [ref], Tolerance())
    assert not bad.passed and "structure differs" in bad.note
    (shape,) = compare_outputs(ref, torch.ones(6), Tolerance())
    assert not shape.passed and "shape differs" in shape.note


def test_nan_positions_must_agree():
    ref = torch.tensor([1.0, float("nan")])
    (ok,) = compare_outputs(ref, ref.clone(), Tolerance())
    assert ok.passed
    (bad,) = compare_outputs(ref, torch.tensor([float("nan"), float("nan")]), Tolerance())
    assert not bad.passed and bad.worst_index == [0]
