"""The candidate process: imports one candidate under guard and runs it on the verifier's inputs.

Inputs are generated (and the reference model's weights taken) *before* the candidate is imported,
so nothing the candidate does at import time can influence them. Every call then runs under the
runtime guards; outputs go to disk for the reference process to judge. This process never sees a
reference output.
"""

from __future__ import annotations

import inspect
import time
from pathlib import Path
from typing import Any

import torch

from evaluator.sandboxed import guards, handoff, taskspec
from evaluator.sandboxed.bounds import BoundsChecker
from evaluator.sandboxed.output_checks import (
    Rejection,
    require_no_alias,
    require_outputs_left_alone,
    require_same,
    same_bits,
)
from evaluator.sandboxed.reference import as_output_list

# Modules a candidate may import itself (the static checker enforces the same list on the source).
ALLOWED_IMPORT_ROOTS = frozenset({
    "torch", "triton", "math", "typing", "dataclasses", "functools", "itertools", "collections", "enum",
    "operator", "__future__", "kernelevo",
})


class CandidateRunner:
    def __init__(self) -> None:
        self.model: torch.nn.Module | None = None
        self.inputs: dict[int, list[list[Any]]] = {}  # seed -> cases (CPU copies)
        self.live: dict[int, list[Any]] = {}  # case -> the device tensors every seed is written into
        self.kept_outputs: list[torch.Tensor] = []
        self.bounds = BoundsChecker()  # installed on CPU, where Triton runs in the interpreter

    # -- load -------------------------------------------------------------------------------------
    def load(self, req: dict[str, Any]) -> dict[str, Any]:
        self.device, self.small = req["device"], req["small"]
        self.seeds = list(req["seeds"])
        self.task = task = taskspec.load_task(req["task"])
        for si, seed in enumerate(self.seeds):
            self.inputs[seed] = taskspec.cached_cases(task, self.small, seed, taskspec.distribution_for(task, si),
                                                      req.get("inputs_dir"), write=False)
        torch.manual_seed(int(req["init_seed"]))
        reference_state = {k: v.detach().clone() for k, v in task.model_cls(*task.init_inputs()).state_dict().items()}
        self.allow_ops = tuple(req.get("allow_ops", ())) + task.allow_ops
        self.expected = {int(c["case"]): c["outputs"] for c in req.get("expected", [])}

        self.launches = guards.LaunchCounter()
        self.launches.install(Path(req["extension_root"]) if req.get("extension_root") else None)
        if self.device == "cpu":
            self.bounds.install()
        self.audit = guards.AuditGuard(Path(req["candidate"]), ALLOWED_IMPORT_ROOTS)
        if req.get("runtime_guards", True):
            self.audit.install()
        self.attrs_before = guards.snapshot_attributes()
        self.threads_before = guards.live_threads()

        candidate_path = Path(req["candidate"])
        module = self._guarded_import(candidate_path)
        self._check_guards("import")
        cls = getattr(module, "ModelNew", None)
        if not isinstance(cls, type) or not issubclass(cls, torch.nn.Module):
            raise Rejection("compile_error", "the candidate defines no `class ModelNew(nn.Module)`; define it with the "
                                             "same constructor arguments and forward signature as the task's Model")
        _check_signature(task.model_cls, cls, {len(case) for case in self.inputs[self.seeds[0]]})
        torch.manual_seed(int(req["init_seed"]))
        self.audit.active = True
        try:
            model = cls(*task.init_inputs())
        except Exception as exc:
            raise Rejection("compile_error", f"ModelNew(*get_init_inputs()) raised {type(exc).__name__}: "
                                             f"{_first_line(exc)}{_line_in(exc, candidate_path)}") from exc
        finally:
            self.audit.active = False
        own = model.state_dict()
        with torch.no_grad():
            for name, tensor in own.items():
                src = reference_state.get(name)
                if src is not None and src.shape == tensor.shape:
                    tensor.copy_(src.to(tensor.dtype))
        self.model = model  # moved to the device by check(): a prefetched load touches no GPU memory
        self._check_guards("construction")
        return {"ok": True}

    def compile(self, req: dict[str, Any]) -> dict[str, Any]:
        """Import the candidate under guard only, so that its builds (load_inline, NVRTC) land in the
        shared cache; the process is discarded afterwards (parallel pre-compilation)."""
        self.launches = guards.LaunchCounter()
        self.launches.install(Path(req["extension_root"]))
        self.audit = guards.AuditGuard(Path(req["candidate"]), ALLOWED_IMPORT_ROOTS)
        self.audit.install()
        try:
            self._guarded_import(Path(req["candidate"]))
        except Rejection as exc:
            return {"ok": True, "compiled": False, "message": str(exc)}
        return {"ok": True, "compiled": True}

    def _guarded_import(self, path: Path) -> Any:
        """Import the candidate module with the audit hook active; failures are compile errors."""
        self.audit.active = True
        try:
            return taskspec.import_file(path, "candidate")
        except SyntaxError as exc:
            raise Rejection("compile_error", f"{path.name}:{exc.lineno}: syntax error: {exc.msg}") from exc
        except Exception as exc:
            if self.audit.violations:  # the import failed because a guard refused something
                raise Rejection("cheat_suspected", f"during import: refused {self.audit.violations[0]}") from exc
            raise Rejection("compile_error", f"importing the candidate raised {type(exc).__name__}: "
                                             f"{_first_line(exc)}{_line_in(exc, path)}") from exc
        finally:
            self.audit.active = False

    # -- correctness calls ------------------------------------------------------------------------
    def check(self, req: dict[str, Any]) -> dict[str, Any]:
        """Run every (case, seed); the first seed three times on identical inputs (races)."""
        assert self.model is not None
        self.model = self.model.to(self.device)
        for ci, case in enumerate(self.inputs[self.seeds[0]]):
            self.live[ci] = [taskspec.guarded_copy(v, self.device) for v in case]
        outdir = Path(req["outdir"])
        outdir.mkdir(parents=True, exist_ok=True)
        nondeterministic_ok = bool(req.get("nondeterministic_ok"))
        written = []
        phases = {"first_call_s": 0.0, "calls_s": 0.0, "handoff_s": 0.0}  # first call: JIT compiles land here
        for si, seed in enumerate(self.seeds):
            for ci, fresh in enumerate(self.inputs[seed]):
                live = self.live[ci]
                if si > 0:  # same storage, new values: a cache keyed by pointer now returns stale answers
                    for j, (dst, src) in enumerate(zip(live, fresh)):
                        if isinstance(dst, torch.Tensor) and isinstance(src, torch.Tensor) and dst.shape == src.shape:
                            dst.copy_(src)
                        else:  # non-tensor inputs (or a seed that changes a shape) are passed as drawn
                            live[j] = taskspec.guarded_copy(src, self.device)
                clock = time.perf_counter()
                outs = self._guarded_call(live, ci, where=f"case {ci}, seed {seed}")
                phases["first_call_s" if not written else "calls_s"] += time.perf_counter() - clock
                clock = time.perf_counter()
                if si == 0:
                    for repeat in (2, 3):
                        again = self._guarded_call(live, ci, where=f"case {ci}, seed {seed} (run {repeat})")
                        require_same(outs, again, nondeterministic_ok, f"case {ci}, seed {seed}")
                phases["calls_s"] += time.perf_counter() - clock
                clock = time.perf_counter()
                sent = handoff.send(outs, outdir / f"out-{ci}-{seed}.pt", req.get("handoff"), f"case {ci}, seed {seed}")
                written.append({"case": ci, "seed": seed, "distribution": taskspec.distribution_for(self.task, si),
                                **sent})
                phases["handoff_s"] += time.perf_counter() - clock
        require_outputs_left_alone()
        return {"ok": True, "outputs": written, "resources": self.launches.resources,
                "phases": {k: round(v, 3) for k, v in phases.items()}}

    def replay(self, req: dict[str, Any]) -> dict[str, Any]:
        """Calls that look like a benchmark (no poisoning, fresh seeds); their outputs are judged too."""
        outdir = Path(req["outdir"])
        written = []
        for seed in req["seeds"]:
            cases = taskspec.generate_cases(self.task, self.small, int(seed), "task")
            for ci, case in enumerate(cases):
                live = [taskspec.guarded_copy(v, self.device) for v in case]
                outs = self._guarded_call(live, ci, where=f"case {ci}, replay seed {seed}", poison=False)
                sent = handoff.send(outs, outdir / f"replay-{ci}-{seed}.pt", req.get("handoff"),
                                    f"case {ci}, replay seed {seed}")
                written.append({"case": ci, "seed": int(seed), "distribution": "task", **sent})
        require_outputs_left_alone()
        return {"ok": True, "outputs": written}

    def save_kept(self, req: dict[str, Any]) -> dict[str, Any]:
        """Outputs sent earlier through CUDA IPC, written as files instead (the reference could not map them)."""
        resent = []
        for item in req["outputs"]:
            if "kept" in item:
                rest = {k: v for k, v in item.items() if k not in ("ipc", "kept", "path")}
                item = {**rest, **handoff.save_kept(int(item["kept"]), Path(item["path"]))}
            resent.append(item)
        return {"ok": True, "outputs": resent}

    def _guarded_call(self, inputs: list[Any], case: int, where: str, poison: bool = True) -> list[torch.Tensor]:
        assert self.model is not None
        before = [x.clone() if isinstance(x, torch.Tensor) else None for x in inputs]
        if poison:
            guards.poison_allocator(self.device, sum(x.numel() * x.element_size() for x in inputs
                                                     if isinstance(x, torch.Tensor)))
        launches = self.launches.count
        recorder = guards.OpRecorder(self.allow_ops)
        deterministic = torch.are_deterministic_algorithms_enabled()
        torch.use_deterministic_algorithms(poison, warn_only=True)  # poison: torch.empty returns NaN-filled memory
        self.audit.active = True
        try:
            with torch.no_grad(), recorder:
                raw = self.model(*inputs)
            if self.device == "cuda":
                torch.cuda.synchronize()
        except PermissionError as exc:
            raise Rejection("cheat_suspected", f"{where}: {exc}") from exc
        except Exception as exc:
            raise Rejection("crashed", f"forward raised {type(exc).__name__} on {where}: {_first_line(exc)}"
                                       f"{_line_in(exc, Path(self.audit.candidate_file))}") from exc
        finally:
            self.audit.active = False
            torch.use_deterministic_algorithms(deterministic)
        self._check_guards(where)
        if self.bounds.violations:
            raise Rejection("incorrect", f"{where}: {self.bounds.violations[0]}; mask that access to the tensor's own "
                                         "elements (on a GPU it reads another allocation's memory or faults)")
        if recorder.violations:
            raise Rejection("cheat_suspected", f"{where}: forward ran torch ops {', '.join(recorder.violations)}; "
                                               "the candidate's own kernels must do the math (allocation, views and "
                                               "dtype casts are fine)")
        if self.launches.count == launches:
            raise Rejection("cheat_suspected", f"{where}: forward launched no kernel")
        outs = as_output_list(raw)
        for k, out in enumerate(outs):
            if type(out) is not torch.Tensor:
                raise Rejection("cheat_suspected", f"{where}: output {k} is a {type(out).__name__}, not a plain "
                                                   "torch.Tensor (tensor subclasses and lazy values are refused)")
            if out.device.type != self.device:
                raise Rejection("incorrect", f"{where}: output {k} is on {out.device}, expected {self.device}")
        self._require_expected_outputs(outs, case, where)
        require_no_alias(outs, inputs, self.kept_outputs, where)
        for k, (x, old) in enumerate(zip(inputs, before)):
            if old is not None and not same_bits(x, old):
                raise Rejection("cheat_suspected", f"{where}: the candidate modified input {k} in place")
            if not taskspec.guards_intact(x):
                raise Rejection("incorrect", f"{where}: the candidate wrote outside input {k} (out-of-bounds store)")
        self.kept_outputs.extend(outs)
        return outs

    def time(self, req: dict[str, Any]) -> dict[str, Any]:
        """Time the candidate on the rotating timing input sets (CUDA only)."""
        from evaluator.sandboxed.timing_ops import candidate_time

        return candidate_time(self, req)

    def _require_expected_outputs(self, outs: list[torch.Tensor], case: int, where: str) -> None:
        expected = self.expected.get(case)
        if expected is None:
            return
        if len(outs) != len(expected):
            raise Rejection("incorrect",
                            f"{where}: forward returned {len(outs)} outputs, the reference {len(expected)}")
        for k, (out, want) in enumerate(zip(outs, expected)):
            if list(out.shape) != want["shape"] or str(out.dtype) != want["dtype"]:
                raise Rejection("incorrect", f"{where}: output {k} is {str(out.dtype)} {list(out.shape)}, expected "
                                             f"{want['dtype']} {want['shape']}")

    def _check_guards(self, where: str) -> None:
        if self.audit.violations:
            raise Rejection("cheat_suspected", f"during {where}: refused {self.audit.violations[0]}")
        changed = guards.changed_attributes(self.attrs_before, guards.snapshot_attributes())
        if changed:
            raise Rejection("cheat_suspected", f"during {where}: the candidate changed {', '.join(changed[:5])}")
        if guards.live_threads() - self.threads_before:
            raise Rejection("cheat_suspected", f"during {where}: the candidate started a thread")
        if self.launches.foreign_stream_launches:
            raise Rejection("cheat_suspected", f"during {where}: {self.launches.foreign_stream_launches} kernel "
                                               "launch(es) went to a CUDA stream other than the one forward was "
                                               "called on (work there escapes the timer); launch on "
                                               "torch.cuda.current_stream() and create no streams")


def _check_signature(model_cls: type, new_cls: type, n_args: set[int]) -> None:
    """ModelNew.forward must accept exactly the argument counts the cases pass (as Model.forward does)."""
    try:
        params = list(inspect.signature(new_cls.forward).parameters.values())[1:]
    except (TypeError, ValueError):
        return
    if any(p.kind == p.VAR_POSITIONAL for p in params):
        return
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    required = [p for p in positional if p.default is p.empty]
    if all(len(required) <= n <= len(positional) for n in n_args):
        return
    ref = list(inspect.signature(model_cls.forward).parameters)[1:]
    raise Rejection("compile_error", f"ModelNew.forward({', '.join(p.name for p in params)}) cannot take the "
                                     f"{'/'.join(map(str, sorted(n_args)))} inputs the task passes to "
                                     f"Model.forward({', '.join(ref)}); keep the same arguments")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:400] if text else type(exc).__name__


def _line_in(exc: BaseException, path: Path) -> str:
    import traceback

    frames = [f for f in traceback.extract_tb(exc.__traceback__) if Path(f.filename).resolve() == path.resolve()]
    return f" (at {path.name}:{frames[-1].lineno})" if frames else ""
