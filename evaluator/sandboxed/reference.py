"""The reference process: computes the task's answers where no candidate can reach them.

It imports only the task (never a candidate), computes a float64 reference and the eager output in
the task's own dtypes for every case and seed, keeps them in its own memory, and compares the outputs
candidate processes hand over (mapped from their GPU memory, or files loaded with ``weights_only=True``
so a candidate cannot smuggle code into this process: :mod:`evaluator.sandboxed.handoff`). On CUDA it also
measures the baselines.
"""

from __future__ import annotations

from typing import Any

import torch

from evaluator.sandboxed import compare as cmp
from evaluator.sandboxed import environment, handoff, taskspec


def as_output_list(value: Any) -> list[Any]:
    """Outputs of a forward call as a list (a single tensor, or a tuple/list of them)."""
    return list(value) if isinstance(value, (tuple, list)) else [value]


def _to_precision(value: Any, dtype: torch.dtype) -> Any:
    if isinstance(value, torch.Tensor) and value.is_floating_point():
        return value.to(dtype)
    return value


class ReferenceRunner:
    """Holds the task, its reference outputs per (case, seed), and the baselines."""

    def __init__(self) -> None:
        self.task: taskspec.LoadedTask | None = None
        self.refs: dict[tuple[int, int, float | None], list[torch.Tensor]] = {}
        self.tolerances: dict[int, list[cmp.Tolerance]] = {}
        self.output_dtypes: dict[int, list[str]] = {}
        self.device = "cpu"
        self.small = True
        self.seeds: list[int] = []
        self.init_seed = 0
        self.inputs_dir: str | None = None

    def load(self, req: dict[str, Any]) -> dict[str, Any]:
        self.device, self.small = req["device"], req["small"]
        self.seeds, self.init_seed = list(req["seeds"]), int(req["init_seed"])
        self.inputs_dir = req.get("inputs_dir")
        self.task = task = taskspec.load_task(req["task"])
        self.model_native = self._build_model()
        try:
            self.model_ref: torch.nn.Module | None = self._build_model().to(torch.float64)
        except Exception:
            self.model_ref = None
        cases_meta: list[dict[str, Any]] = []
        eager_err: dict[int, list[float]] = {}
        for si, seed in enumerate(self.seeds):
            dist = taskspec.distribution_for(task, si)
            for ci, (inputs, native, ref) in enumerate(self._compute_seed(seed, dist)):
                errs = [cmp.relative_l2(n, r) if n.is_floating_point() else 0.0 for n, r in zip(native, ref)]
                eager_err[ci] = [max(a, b) for a, b in zip(eager_err.get(ci, errs), errs)]
                if si == 0:
                    self.output_dtypes[ci] = [str(n.dtype) for n in native]
                    cases_meta.append({
                        "case": ci,
                        "inputs": [taskspec.describe(v) for v in inputs],
                        "outputs": [taskspec.describe(n) for n in native],
                        "hbm_bytes": taskspec.hbm_bytes(task, inputs, native),
                    })
        for ci, meta in enumerate(cases_meta):
            self.tolerances[ci] = [
                cmp.tolerance_for(getattr(torch, o["dtype"].split(".")[-1]), task.tolerance, eager_err[ci][k])
                for k, o in enumerate(meta["outputs"])
            ]
            meta["tolerance"] = [t.__dict__ for t in self.tolerances[ci]]
            meta["eager_rel_err"] = eager_err[ci]
        return {
            "ok": True,
            "cases": cases_meta,
            "reference_precision": "float64" if self.model_ref is not None else "task dtype (float64 failed)",
            "allow_ops": list(task.allow_ops),
            "nondeterministic_ok": task.nondeterministic_ok,
            "distributions": list(task.distributions),
            "environment": environment.collect(self.device),
        }

    def _compute_seed(self, seed: int, dist: str, scale: float | None = None,
                      only_case: int | None = None) -> list[tuple[list[Any], list[torch.Tensor], list[torch.Tensor]]]:
        """Inputs, eager outputs and float64 references of the cases of one seed (cached); ``scale``: the
        floating inputs multiplied by it first, as a timed call saw them."""
        assert self.task is not None
        results = []
        for ci, case in enumerate(taskspec.cached_cases(self.task, self.small, seed, dist, self.inputs_dir, True)):
            if only_case is not None and ci != only_case:
                continue
            inputs = [v.to(self.device) if isinstance(v, torch.Tensor) else v for v in case]
            if scale is not None:
                inputs = taskspec.rescaled(inputs, scale)
            native = self._forward(self.model_native, inputs, f"case {ci}, seed {seed}")
            ref = native
            if self.model_ref is not None:
                try:
                    ref = self._forward(self.model_ref, [_to_precision(v, torch.float64) for v in inputs], "")
                except Exception:
                    self.model_ref, ref = None, native
            self.refs[(ci, seed, scale)] = [r.detach() for r in ref]
            results.append((inputs, native, ref))
        return results

    def reference(self, ci: int, seed: int, dist: str, scale: float | None = None) -> list[torch.Tensor]:
        """The float64 reference outputs of case ``ci`` under ``seed`` (computed on first use)."""
        if (ci, seed, scale) not in self.refs:
            self._compute_seed(seed, dist, scale, only_case=None if scale is None else ci)
        return self.refs.pop((ci, seed, scale)) if scale is not None else self.refs[(ci, seed, scale)]

    def _build_model(self) -> torch.nn.Module:
        assert self.task is not None
        torch.manual_seed(self.init_seed)
        try:
            model = self.task.model_cls(*self.task.init_inputs())
        except taskspec.TaskError:
            raise
        except Exception as exc:
            raise taskspec.TaskError(f"{self.task.path}: Model(*get_init_inputs()) raised "
                                     f"{type(exc).__name__}: {exc}") from exc
        return model.to(self.device).eval()

    def _forward(self, model: torch.nn.Module, inputs: list[Any], where: str) -> list[torch.Tensor]:
        assert self.task is not None
        try:
            with torch.no_grad():
                out = as_output_list(model(*inputs))
        except Exception as exc:
            if not where:
                raise
            raise taskspec.TaskError(f"{self.task.path}: Model.forward raised {type(exc).__name__} on {where}: "
                                     f"{exc}") from exc
        if not all(isinstance(o, torch.Tensor) for o in out):
            raise taskspec.TaskError(f"{self.task.path}: Model.forward must return a tensor or a tuple of tensors")
        return out

    def baselines(self, req: dict[str, Any]) -> dict[str, Any]:
        """Time eager and torch.compile on the timing input sets (CUDA only)."""
        from evaluator.sandboxed.timing_ops import reference_baselines

        return reference_baselines(self, req)

    def compare(self, req: dict[str, Any]) -> dict[str, Any]:
        """Compare each (case, seed) output a candidate process sent (:mod:`evaluator.sandboxed.handoff`).

        ``handoff_unavailable`` in the reply: CUDA IPC failed here, so nothing was compared; the caller
        has the candidate write the same outputs as files and asks again."""
        results = []
        for item in req["outputs"]:
            ci, seed = int(item["case"]), int(item["seed"])
            refs = self.reference(ci, seed, item.get("distribution", "task"), item.get("scale"))
            try:
                outs = handoff.receive(item, self.device, req.get("key"))
            except handoff.HandoffError as exc:
                if exc.kind == "unavailable":
                    return {"ok": True, "results": [], "handoff_unavailable": str(exc)}
                reason = {"tampered": "cheat_suspected"}.get(exc.kind, "incorrect")
                results.append({"case": ci, "seed": seed, "ok": False, "problem": str(exc), "reason": reason,
                                "outputs": []})
                continue
            results.append({"case": ci, "seed": seed, **self._compare_one(ci, refs, outs)})
            del outs  # an IPC mapping is released here, before the candidate process is killed
        return {"ok": True, "results": results}

    def _compare_one(self, ci: int, refs: list[torch.Tensor], outs: Any) -> dict[str, Any]:
        if not isinstance(outs, list) or not all(type(o) is torch.Tensor for o in outs):
            return {"ok": False, "problem": "outputs must be plain torch.Tensor objects", "outputs": []}
        if len(outs) != len(refs):
            return {"ok": False, "problem": f"forward returned {len(outs)} outputs, the reference {len(refs)}",
                    "outputs": []}
        per_output = []
        for k, (out, ref) in enumerate(zip(outs, refs)):
            expected_dtype = self.output_dtypes[ci][k]
            if str(out.dtype) != expected_dtype:
                per_output.append(cmp.Comparison(False, problem=f"output {k} has dtype {out.dtype}, expected "
                                                               f"{expected_dtype}").to_dict())
                continue
            per_output.append(cmp.compare(out, ref, self.tolerances[ci][k]).to_dict())
        ok = all(p["ok"] for p in per_output)
        problem = "; ".join(f"output {k}: {p['problem']}" for k, p in enumerate(per_output) if not p["ok"])
        return {"ok": ok, "problem": problem, "outputs": per_output}
