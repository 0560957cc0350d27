"""Where a failing candidate's graph first leaves the reference's graph: the first operator
whose value differs, found by running both exported programs node by node (best effort: a
search that fails is a note, never an error)."""

from __future__ import annotations

from typing import Any

import torch
import torch.utils._pytree as pytree

from migrate.verify import convert as conv
from migrate.verify import inputs as inp
from migrate.verify import load
from migrate.verify import runners as rn
from migrate.verify.errors import describe, quiet
from migrate.verify.options import VerifyConfig
from migrate.verify.results import Cell


def divergence(
    cand: rn.Candidate,
    cells: list[Cell],
    target: load.Target,
    ref_graph: Any,
    samples: list[inp.Sample],
    cell: Cell,
    cfg: VerifyConfig,
) -> dict[str, Any] | None:
    """Where a failing candidate's graph first leaves the reference's graph (best effort)."""
    sample = next(
        (s for s in samples if cell.worst and s.name == cell.worst.get("sample")), samples[0]
    )
    if sample.meta.get("kind") == "specialisation":
        return {
            "operator": None,
            "note": f"{sample.name} changes an input the program was specialised to "
            "(see the specialised notes)",
        }
    if cand.ep_source in ("lowered-from", "compiled-from"):
        ep_cell = next((c for c in cells if c.candidate == "exported" and c.device == "cpu"), None)
        if ep_cell is not None and ep_cell.status == "pass":
            step = (
                f"lowering ({cand.backend})"
                if cand.ep_source == "lowered-from"
                else "AOTInductor's compiled kernels"
            )
            return {
                "operator": None,
                "note": f"the exported program matches; the difference comes from {step}",
            }
    try:
        with quiet(cfg.debug):
            if ref_graph is None:
                if target.kind == "archive":
                    ref_graph = conv.convert_archive(target.reference, sample.args).ep
                else:
                    ref_graph = conv.export_module(target.module, sample.args).ep
            cand_graph = cand.ep
            if cand_graph is None and cand.module is not None:
                cand_graph = conv.export_module(cand.module, sample.args).ep
            if cand_graph is None:
                return None
            if cand_graph is ref_graph or cand.ep_source == "reference":
                return {
                    "operator": None,
                    "note": "the candidate is the reference's own converted graph; "
                    "no independent graph to align",
                }
            found = first_divergence(ref_graph, cand_graph, sample.args)
    except Exception as exc:  # best effort: never turn a mismatch into an error
        return {"operator": None, "note": f"divergence search failed: {describe(exc)}"}
    return found


def _capture(ep: Any, args: tuple[Any, ...]) -> tuple[Any, dict[str, Any], dict[str, Any]]:
    """Run ``ep.module()`` node by node; return the graph module, node values and params."""
    gm = ep.module()
    values: dict[str, Any] = {}

    class Recorder(torch.fx.Interpreter):
        def run_node(self, n: Any) -> Any:
            out = super().run_node(n)
            values[n.name] = out
            return out

    with torch.no_grad():
        Recorder(gm).run(*pytree.tree_leaves(args))
    params = dict(gm.named_parameters())
    params.update(dict(gm.named_buffers()))
    return gm, values, params


def _module_path(node: Any) -> str:
    stack = node.meta.get("nn_module_stack") or {}
    if stack:
        path = list(stack.values())[-1][0]
        return str(path)
    return ""


def first_divergence(
    ref_ep: Any, cand_ep: Any, args: tuple[Any, ...], rtol: float = 1e-4, atol: float = 1e-5
) -> dict[str, Any] | None:
    """The first operator of the candidate graph whose value leaves the reference graph's.

    Both programs are decomposed to core ATen so that the converter's and
    ``torch.export``'s spellings of an op agree; nodes are aligned by operator
    and occurrence (the k-th ``aten.addmm`` with the k-th ``aten.addmm``).
    """
    with quiet():
        ref_ep = ref_ep.run_decompositions()
        cand_ep = cand_ep.run_decompositions()
        _, rvals, rparams = _capture(ref_ep, args)
        cgm, cvals, cparams = _capture(cand_ep, args)
        rgm = ref_ep.module()
    differing = []
    for name, p in cparams.items():
        q = rparams.get(name)
        if q is not None and q.shape == p.shape and not torch.equal(q.detach(), p.detach()):
            differing.append(name)

    def keyed(gm: Any) -> dict[tuple[str, int], Any]:
        seen: dict[str, int] = {}
        out = {}
        for n in gm.graph.nodes:
            if n.op != "call_function":
                continue
            t = str(n.target)
            k = seen.get(t, 0)
            seen[t] = k + 1
            out[(t, k)] = n
        return out

    ref_nodes = keyed(rgm)
    ref_targets = {t for t, _ in ref_nodes}
    extra: list[str] = []  # candidate-only operators met before the divergence
    for (target, k), node in keyed(cgm).items():
        rnode = ref_nodes.get((target, k))
        if rnode is None:
            if target not in ref_targets and target not in extra and not target.startswith("<"):
                extra.append(target)
            continue
        a, b = rvals.get(rnode.name), cvals.get(node.name)
        if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
            continue
        if a.shape != b.shape or not a.dtype.is_floating_point or a.dtype != b.dtype:
            continue
        if torch.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True):
            continue
        return {
            "operator": target,
            "node": node.name,
            "occurrence": k,
            "module": _module_path(node),
            "max_abs": float((a.double() - b.double()).abs().max().item()),
            "differing_parameters": differing,
            "candidate_only_operators": extra,
        }
    if differing:
        return {
            "operator": None,
            "node": None,
            "occurrence": None,
            "module": "",
            "max_abs": None,
            "differing_parameters": differing,
            "candidate_only_operators": extra,
        }
    return None
