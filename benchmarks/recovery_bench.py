"""The recovery table: each archive pattern through `migrate convert`'s recovery ladder.

For every archive built by ``tests/verify/recovery_models.py`` (plus the zoo's
scripted TransformerEncoder): the ladder step that converted it, the lowering
path and time, the wall time of the whole conversion (load, audit, ladder,
lowering, the .pte checked on 3 samples) and the .pte's max abs error against
the archive on the example. Lowering dominates; the first row also pays
ExecuTorch's one-time start-up.

Run:  python benchmarks/recovery_bench.py
"""

from __future__ import annotations

import sys
import tempfile
import time
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import torch  # noqa: E402

from fixtures.models import zoo  # noqa: E402
from migrate.verify import VerifyError  # noqa: E402
from migrate.verify.convert_flow import run_convert  # noqa: E402
from tests.verify import recovery_models as rm  # noqa: E402


def _zoo_transformer():
    module, example = zoo.transformer()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.jit.script(module), example


ROWS = {
    "traced position ids (BERT/Llama-like)": rm.position_ids_traced,
    "scripted nn.TransformerEncoder": _zoo_transformer,
    "scripted loop over x.size(0)": rm.shape_loop,
    "scripted Optional[Tensor] argument": rm.optional_arg,
    "scripted List[Tensor] input": rm.list_input,
    "scripted forward + @torch.jit.export encode": rm.two_methods,
    "scripted loop over an int argument": rm.arg_loop,
    "scripted loop over a tensor value": rm.value_loop,
}


def _pte_error(pte: Path, ts, example, methods) -> float:
    from executorch.runtime import Runtime

    program = Runtime.get().load_program(str(pte))
    worst = 0.0
    for m in methods:
        got = program.load_method(m).execute(list(torch.utils._pytree.tree_leaves(example)))[0]
        ref = getattr(ts, m)(*example)
        worst = max(worst, (got - ref).abs().max().item())
    return worst


def main() -> None:
    print(
        f"{'archive':46} {'result':9} {'recovery':36} {'lowering':24} {'wall s':>7} {'max abs':>8}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for label, factory in ROWS.items():
            ts, example = factory()
            name = factory.__name__.strip("_")
            path = Path(tmp) / f"{name}.pt"
            inputs = Path(tmp) / f"{name}_inputs.pt"
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                torch.jit.save(ts, str(path))
            torch.save(example, inputs)
            start = time.perf_counter()
            try:
                res = run_convert(str(path), str(inputs), [], Path(tmp) / name)
            except VerifyError as exc:
                wall = time.perf_counter() - start
                print(
                    f"{label:46} {'error':9} {exc.stage + ': ' + exc.message[:60]:61} {wall:7.1f}"
                )
                continue
            wall = time.perf_counter() - start
            paths = ", ".join(r.path for r in res.recoveries.values())
            lower = ", ".join(
                f"{r.lower_path}" + (f" {r.lower_s:.1f}s" if r.lower_s else "")
                for r in res.recoveries.values()
            )
            if res.together_s:
                lower += f" (together {res.together_s:.1f}s)"
            if res.mismatch:
                print(f"{label:46} {'mismatch':9} {paths:36} {lower:24} {wall:7.1f}")
                continue
            err = _pte_error(res.pte, ts, example, list(res.recoveries))
            print(f"{label:46} {'pass':9} {paths:36} {lower:24} {wall:7.1f} {err:8.1e}")


if __name__ == "__main__":
    main()
