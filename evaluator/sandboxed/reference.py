"""The reference process: the task's answers, where no candidate can reach them.

It imports only the task (never a candidate). From the seeds the parent drew it builds every input a
candidate will see and writes each input set to its own file (named by a random token, never by its
seed) for the parent to hand to candidate processes as file descriptors; it computes a float64 reference
and the eager output in the task's own dtypes for every case and seed, keeps them in its own memory, and
judges the outputs candidate processes hand over (mapped from their GPU memory, or files loaded with
``weights_only=True`` so a candidate cannot smuggle code into this process: :mod:`evaluator.sandboxed.handoff`).
Runs on identical inputs must agree bitwise (decided here, not in the candidate's process). On CUDA it
also measures the baselines.
"""

from __future__ import annotations

import copy
import os
import random
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch

from evaluator.sandboxed import compare as cmp
from evaluator.sandboxed import environment, handoff, sentinels, taskspec
from evaluator.sandboxed.near import (
    FOLLOWS,
    SIGNED_KINDS,
    Patches,
    apply_patches,
    kinds_for,
    near_duplicate_patches,
)
from evaluator.sandboxed.output_checks import same_bits

MAX_EVALUATIONS_KEPT = 8
PARAMETER_JITTER = 0.1  # relative to a parameter's mean magnitude (1 for one that starts at zeros)


def module_tables(model: torch.nn.Module) -> dict[str, dict[str, dict[str, Any]]]:
    """Every module's parameter and buffer tables by path, ``None`` entries and non-persistent buffers included (a
    parameter as ``[tensor, requires_grad]``): what KernelEvo's dispatcher shares with a kernel's ``ModelNew``
    (``kernelevo.dispatch._share_state``), for the candidate process to hand over the same way. A tensor under two
    names is one object here (and after loading): tied weights stay tied."""
    copies: dict[int, torch.Tensor] = {}

    def copy(tensor: torch.Tensor) -> torch.Tensor:
        if id(tensor) not in copies:
            copies[id(tensor)] = tensor.detach().cpu().clone()
        return copies[id(tensor)]

    tables: dict[str, dict[str, dict[str, Any]]] = {}
    for path, module in model.named_modules():
        params = vars(module).get("_parameters") or {}
        buffers = vars(module).get("_buffers") or {}
        tables[path] = {
            "_parameters": {k: None if v is None else [copy(v), bool(v.requires_grad)] for k, v in params.items()},
            "_buffers": {k: None if v is None else copy(v) for k, v in buffers.items()},
        }
    return tables


def perturb_parameters(model: torch.nn.Module, seed: int) -> None:
    """Move the trainable floating parameters off their constructor's values, the same way in every build of the
    session's model (a function of ``seed``, the reference process's own secret: the native, float64, baseline
    and candidates' copies agree).

    Norms start at ones and zeros (bench/ops/rms_norm, layer_norm, a batch norm), where multiplying by the weight
    or adding the bias changes nothing: a kernel that never reads them (``redteam/s7_default_weights_rms_norm``)
    was right on every check and wrong on any trained or loaded model. Frozen parameters and buffers keep their
    values (masks, tables: structure the op may rely on), except a batch norm's running statistics, which start at
    zeros and ones too and which a trained network has moved (the mean shifted, the variance scaled, never below
    zero)."""
    generator = torch.Generator().manual_seed(seed)

    def noise(like: torch.Tensor) -> torch.Tensor:
        return torch.randn(like.shape, generator=generator, dtype=torch.float64)

    def move(tensor: Any, scaled: bool = False) -> None:
        """Shift a floating tensor by noise of its mean magnitude (``scaled``: multiply it, it stays positive)."""
        if not isinstance(tensor, torch.Tensor) or not tensor.is_floating_point() or tensor.numel() == 0:
            return
        base = tensor.detach().to("cpu", torch.float64)
        moved = base * torch.exp(PARAMETER_JITTER * noise(base)) if scaled else \
            base + PARAMETER_JITTER * (float(base.abs().mean()) or 1.0) * noise(base)
        tensor.copy_(moved.to(tensor.dtype))

    with torch.no_grad():
        for _name, param in model.named_parameters():
            if param.requires_grad:
                move(param)
        for module in model.modules():
            if isinstance(module, torch.nn.modules.batchnorm._NormBase):
                move(getattr(module, "running_mean", None))
                move(getattr(module, "running_var", None), scaled=True)


def parameter_step(model: torch.nn.Module, key: int) -> dict[str, torch.Tensor]:
    """Add to each trainable floating parameter of ``model``, in place, noise of :data:`PARAMETER_JITTER` times its
    mean magnitude drawn from ``key``, in the parameter's dtype: what an optimizer step does between two calls.
    Returns the changes by parameter name (on the CPU), which the plain process adds to ``ModelNew``'s alike."""
    generator = torch.Generator().manual_seed(key & 0x7FFFFFFFFFFFFFFF)
    deltas = {}
    with torch.no_grad():
        for name, param in model.named_parameters():
            if not _steppable(param):
                continue
            magnitude = float(param.detach().abs().double().mean())
            magnitude = magnitude if magnitude == magnitude and 0 < magnitude < float("inf") else 1.0
            delta = (torch.randn(param.shape, generator=generator, dtype=torch.float64) * PARAMETER_JITTER
                     * magnitude).to(param.dtype)
            param.add_(delta.to(param.device))
            deltas[name] = delta
    return deltas


def _steppable(param: torch.Tensor) -> bool:
    """A parameter an optimizer changes: trainable, floating, not empty."""
    return param.requires_grad and param.is_floating_point() and param.numel() > 0


@contextmanager
def _owned(fds: list[int]) -> Iterator[list[int]]:
    """A request's descriptors, taken from the request loop (which closes what is left in its list): each is
    closed once, here, however the handler ends."""
    owned = list(fds)
    fds.clear()
    try:
        yield owned
    finally:
        for fd in owned:
            try:
                os.close(fd)
            except OSError:
                pass


def as_output_list(value: Any) -> list[Any]:
    """Outputs of a forward call as a list (a single tensor, or a tuple/list of them)."""
    return list(value) if isinstance(value, (tuple, list)) else [value]


def _to_precision(value: Any, dtype: torch.dtype) -> Any:
    if isinstance(value, torch.Tensor) and value.is_floating_point():
        return value.to(dtype)
    return value


def _well_defined(native: list[torch.Tensor], ref: list[torch.Tensor]) -> bool:
    """False when eager PyTorch in the task's dtypes is non-finite where the float64 reference is finite: the
    inputs lie outside the op's domain in that dtype (an overflow the op itself has), not a kernel's fault."""
    for n, r in zip(native, ref):
        if n.is_floating_point() and n.shape == r.shape:
            if bool((~torch.isfinite(n) & torch.isfinite(r.to(n.dtype))).any()):
                return False
    return True


MAX_NEAR_KEPT = 48  # near-duplicates whose answers are kept (others are computed again when judged)
MAX_NEAR_MADE = 4096  # near-duplicates this process remembers making (case, seed, key -> kind)


class ReferenceRunner:
    """Holds the task, its reference outputs per (case, seed), and the baselines."""

    def __init__(self, private: Path, device: str) -> None:
        self.private, self.device = Path(private), device
        self.task: taskspec.LoadedTask | None = None
        self.refs: dict[tuple[int, int, float | None], list[torch.Tensor]] = {}
        self.tolerances: dict[tuple[int, int, float | None], list[cmp.Tolerance]] = {}
        self.base_tolerance: dict[int, list[cmp.Tolerance]] = {}
        self.output_dtypes: dict[int, list[str]] = {}
        self.small = True
        self.seeds: list[int] = []
        self.dists: dict[int, str] = {}  # seed -> the distribution its inputs were drawn with
        self.marks: dict[int, tuple[sentinels.Mark, ...]] = {}  # seed -> integer inputs holding a sentinel value
        self.task_source: str | None = None  # the task's source (sentinels.candidates reads names in it)
        self.cpu_model: torch.nn.Module | None = None  # the model on the CPU, where sentinels are tried
        self.init_seed = 0
        self.perturb_seed = 0
        self.inputs_dir: Path | None = None
        self.input_files: dict[tuple[int, int], str] = {}  # (case, seed) -> the file its input set was written to
        # evaluation key -> repeat group -> outputs of its first call (a few evaluations may be in flight)
        self.groups: dict[int, dict[str, tuple[list[torch.Tensor], dict[str, Any]]]] = {}  # key: outputs, judgement
        self.natives: dict[tuple[int, int, float | None], list[torch.Tensor]] = {}  # eager, in the task's dtypes
        # (case, timing seed) -> the file this process wrote that input set to for candidates, and the generator's
        # state after drawing it: a re-validated timed call maps the file instead of drawing its seed again
        self.timing_inputs: dict[tuple[int, int], tuple[str, torch.Tensor]] = {}
        # Other constructor arguments (evaluator.plain_run): the task's float arguments scaled by secret factors,
        # with their own native and float64 models and, per seed, their answers and tolerances.
        self.varied_init: list[Any] | None = None
        self.varied_models: tuple[torch.nn.Module, torch.nn.Module | None] | None = None
        self.varied_refs: dict[tuple[int, int], tuple[list[torch.Tensor], list[cmp.Tolerance]]] = {}
        # Near-duplicates of input sets (evaluator.plain_run): (case, seed, key) -> their answers and tolerances.
        self.near_refs: dict[tuple[int, int, int], tuple[list[torch.Tensor], list[cmp.Tolerance]]] = {}
        self.near_made: dict[tuple[int, int, int], str] = {}  # (case, seed, key) -> kind of a near-duplicate made
        # Parameters stepped in place (evaluator.plain_run): step key -> the stepped native and float64 models, and
        # their answers per (case, seed).
        self.stepped: dict[int, tuple[torch.nn.Module, torch.nn.Module | None]] = {}
        self.stepped_refs: dict[tuple[int, int, int], tuple[list[torch.Tensor], list[cmp.Tolerance]]] = {}

    def load(self, req: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        self.small = req["small"]
        self.seeds, self.init_seed = list(req["seeds"]), int(req["init_seed"])
        # drawn here, never sent: a candidate that knew it (its process shows the init seed's low half) could tell
        # the verifier's weights from a trained model's by recomputing the perturbation
        self.perturb_seed = secrets.randbits(63)
        self.inputs_dir = Path(req["inputs_dir"])
        self.inputs_dir.mkdir(parents=True, exist_ok=True)
        self.task = task = taskspec.load_task(req["task"])
        self.marks, self.task_source, self.cpu_model = {}, None, None
        taskspec.check_kept_inputs_vary(task, self.small, self.seeds)
        self.model_native = self._build_model()
        self._write_init()
        try:
            self.model_ref: torch.nn.Module | None = self._build_model().to(torch.float64)
        except Exception:
            self.model_ref = None
        cases_meta: list[dict[str, Any]] = []
        inputs_files: list[dict[str, Any]] = []
        eager_err: dict[int, list[float]] = {}
        dropped: list[str] = []
        first: list[tuple[list[Any], list[torch.Tensor], list[torch.Tensor]]] = []
        shares = random.Random(self.seeds[0] if self.seeds else 0).sample(sentinels.SHARES, len(sentinels.SHARES))
        for si, seed in enumerate(self.seeds):
            dist = taskspec.distribution_for(task, si)
            computed = self._compute_seed(seed, dist)
            if not all(_well_defined(native, ref) for _, native, ref in computed):
                dropped.append(f"seed {si} ({dist}): eager PyTorch overflows there in the task's dtypes")
                dist = "task"
                computed = self._compute_seed(seed, dist)
            self.dists[seed] = dist
            if dist in taskspec.MARKED_DISTRIBUTIONS:
                computed = self._with_sentinels(seed, dist, computed, shares[len(self.marks) % len(shares)])
            if si == 0:
                first = computed
            for ci, (inputs, native, ref) in enumerate(computed):
                errs = [cmp.relative_l2(n, r) if n.is_floating_point() else 0.0 for n, r in zip(native, ref)]
                eager_err[ci] = [max(a, b) for a, b in zip(eager_err.get(ci, errs), errs)]
                written = self._write_inputs(inputs)
                self.input_files[(ci, seed)] = written
                inputs_files.append({"case": ci, "seed": seed, "file": written})
                if si == 0:
                    self.output_dtypes[ci] = [str(n.dtype) for n in native]
                    cases_meta.append({
                        "case": ci,
                        "inputs": [taskspec.describe(v) for v in inputs],
                        "outputs": [taskspec.describe(n) for n in native],
                        "hbm_bytes": taskspec.hbm_bytes(task, inputs, native),
                    })
        self.cpu_model = None  # sentinels are chosen: a large model's CPU copy is not kept for the session
        for ci, meta in enumerate(cases_meta):
            self.base_tolerance[ci] = [
                cmp.tolerance_for(getattr(torch, o["dtype"].split(".")[-1]), task.tolerance, eager_err[ci][k])
                for k, o in enumerate(meta["outputs"])
            ]
            meta["tolerance"] = [t.__dict__ for t in self.base_tolerance[ci]]
            meta["eager_rel_err"] = eager_err[ci]
        for key in list(self.tolerances):  # widened per (case, seed) from eager's error on exactly those inputs
            self.tolerances[key] = self._tolerances_for(key)
        for meta in cases_meta:
            meta["widen_max"] = max((t.widen for (c, _s, _sc), ts in self.tolerances.items() if c == meta["case"]
                                     for t in ts), default=1.0)
        varied = self._prepare_varied_init(first)
        arities = sorted({len(case) for case in taskspec.generate_cases(task, self.small, self.seeds[0], "task")})
        return {
            "ok": True,
            "cases": cases_meta,
            "inputs": inputs_files,
            "init_file": str(self.inputs_dir / "init.pt"),
            "init_inputs": [taskspec.describe(v) for v in task.init_inputs()],
            "varied_init_file": str(self.inputs_dir / "init-varied.pt") if varied else None,
            "varied_init_inputs": [taskspec.describe(v) for v in varied] if varied else [],
            "forward_arities": arities,
            # the task's own small cases were judged (a CPU run of a task that has them); otherwise its scored cases
            "small_cases": self.small and hasattr(task.module, "get_small_cases"),
            "model_forward": ", ".join(taskspec.forward_parameter_names(task.model_cls)),
            "distributions": [self._described(s) for s in self.seeds],
            "dropped_distributions": dropped,
            "reference_precision": "float64" if self.model_ref is not None else "task dtype (float64 failed)",
            "training_mode_free": self._training_mode_free([(inputs, native) for inputs, native, _ in first]),
            "allow_ops": list(task.allow_ops),
            "nondeterministic_ok": task.nondeterministic_ok,
            "environment": environment.collect(self.device),
        }

    def _write_init(self) -> None:
        """The constructor arguments and the reference model's tables of weights and buffers (built under the init
        seed, perturbed as every build of it), for candidates (:func:`module_tables`)."""
        assert self.task is not None and self.inputs_dir is not None
        init = {"init_inputs": list(self.task.init_inputs()), "tables": module_tables(self._construct_model())}
        try:
            torch.save(init, self.inputs_dir / "init.pt")
        except Exception as exc:
            raise taskspec.TaskError(f"{self.task.path}: get_init_inputs() must return plain values (numbers, strings, "
                                     f"tensors) that can be saved: {type(exc).__name__}: {exc}") from exc

    def _write_inputs(self, inputs: list[Any]) -> str:
        """One input set in its own file, named by a random token (the candidate learns nothing from the name)."""
        return self._write_file([v.detach().cpu() if isinstance(v, torch.Tensor) else v for v in inputs])

    def _write_file(self, value: Any) -> str:
        """``value`` saved for candidate processes in a file named by a random token."""
        assert self.inputs_dir is not None
        path = self.inputs_dir / f"in-{secrets.token_hex(8)}.pt"
        torch.save(value, path)
        return str(path)

    def _with_sentinels(self, seed: int, dist: str, computed: list[tuple[list[Any], list[torch.Tensor],
                                                                         list[torch.Tensor]]], share: float
                        ) -> list[tuple[list[Any], list[torch.Tensor], list[torch.Tensor]]]:
        """The seed's cases again with a sentinel value at secret positions of their integer inputs
        (:mod:`evaluator.sandboxed.sentinels`), where some value means something of its own to the op; else as
        they were."""
        marks = self._find_marks(seed, dist, computed, share)
        if not marks:
            return computed
        self.marks[seed] = marks
        again = self._compute_seed(seed, dist)
        if all(_well_defined(native, ref) for _, native, ref in again):
            return again
        del self.marks[seed]
        return self._compute_seed(seed, dist)

    def _find_marks(self, seed: int, dist: str,
                    computed: list[tuple[list[Any], list[torch.Tensor], list[torch.Tensor]]], share: float
                    ) -> tuple[sentinels.Mark, ...]:
        """For each integer input, the first value of :func:`sentinels.candidates` (in an order drawn from the seed)
        that the op accepts there and that means something of its own, marked in every case that does not draw it.
        Decided once on the smallest case at hand (the task's small cases where the scored ones are large: a
        forward of a [4096, 32000] cross entropy on the CPU costs a second), and on the CPU: an index the op refuses
        raises there, where on a GPU it may end the process's CUDA context with a device-side assert."""
        assert self.task is not None
        cases = [inputs for inputs, _, _ in computed]  # where they are (the device): only the probe is copied
        ks = [k for k in range(min(map(len, cases), default=0))
              if k not in self.task.keep_inputs and all(sentinels.markable(case[k]) for case in cases)]
        if not ks:
            return ()
        if not self.small and hasattr(self.task.module, "get_small_cases"):
            small = taskspec.generate_cases(self.task, True, seed, dist)
            cases = small if all(len(c) > max(ks) and all(sentinels.markable(c[k]) for k in ks) for c in small) \
                else cases
        smallest = min(cases, key=lambda c: sum(v.numel() for v in c if isinstance(v, torch.Tensor)))
        probe = [v.detach().cpu() if isinstance(v, torch.Tensor) else v for v in smallest]
        if self.cpu_model is None:
            self.cpu_model = self.model_native if self.device == "cpu" else copy.deepcopy(self.model_native).cpu()
        model = self.cpu_model
        called: list[int] = []
        base = sentinels.answers(model, probe, record=called)
        if base is None:
            return ()
        if self.task_source is None:
            self.task_source = self.task.path.read_text(errors="replace")
        values = sentinels.candidates(self.task_source, model, called)
        marks: list[sentinels.Mark] = []
        for k in ks:
            order = random.Random(seed * 31 + k).sample(values, len(values))
            found = next((v for v in order if sentinels.fits(probe[k], v)
                          and self._means_something(model, probe, k, v, base, seed, share)), None)
            if found is not None:
                marks.extend((ci, k, found, share) for ci, (inputs, _, _) in enumerate(computed)
                             if sentinels.fits(inputs[k], found))
        return tuple(marks)

    @staticmethod
    def _means_something(model: torch.nn.Module, case: list[Any], k: int, value: int, base: list[torch.Tensor],
                         seed: int, share: float) -> bool:
        """Whether ``value`` at the secret positions of input ``k`` is accepted by the op (no error, answers finite
        wherever they were), changes its answers, and gives answers of its own (not those of an in-range value it
        could stand for, as -1 stands for the last row of ``weight[idx]``)."""
        def at(v: int) -> list[torch.Tensor] | None:
            return sentinels.answers(model, case[:k] + [sentinels.marked(case[k], v, seed, 0, k, share)] + case[k + 1:])

        def same(a: list[torch.Tensor], b: list[torch.Tensor]) -> bool:
            return len(a) == len(b) and all(same_bits(x, y) for x, y in zip(a, b))

        got = at(value)
        if got is None or len(got) != len(base) or any(
                g.shape != b.shape or g.dtype != b.dtype or (b.is_floating_point() and bool(
                    (~torch.isfinite(g) & torch.isfinite(b)).any())) for g, b in zip(got, base)):
            return False
        return not same(got, base) and not any(
            (other := at(alias)) is not None and same(other, got)
            for alias in sentinels.aliases(value, [*case, *model.state_dict().values()]))

    def _described(self, seed: int) -> str:
        """The seed's distribution as a verdict names it, with the sentinels its integer inputs hold."""
        dist, marks = self.dists[seed], self.marks.get(seed, ())
        if not marks:
            return dist
        assert self.task is not None
        names = taskspec.forward_parameter_names(self.task.model_cls)
        held = sorted({(k, value, share) for _ci, k, value, share in marks})
        return dist + " (" + ", ".join(f"{value} at {share:.0%} of {names[k] if k < len(names) else k}"
                                       for k, value, share in held) + ")"

    def _compute_seed(self, seed: int, dist: str, scale: float | None = None,
                      only_case: int | None = None) -> list[tuple[list[Any], list[torch.Tensor], list[torch.Tensor]]]:
        """Inputs, eager outputs and float64 references of the cases of one seed; ``scale``: the floating inputs
        multiplied by it first, as a timed call saw them."""
        assert self.task is not None
        results = []
        if only_case is None:
            cases = list(enumerate(taskspec.generate_cases(self.task, self.small, seed, dist,
                                                           self.marks.get(seed, ()))))
        else:  # a re-validated timed call: only its case
            cases = [(only_case, self._timing_case(only_case, seed, dist))]
        for ci, case in cases:
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
            self.natives[(ci, seed, scale)] = [n.detach() for n in native]
            self.tolerances[(ci, seed, scale)] = []
            results.append((inputs, native, ref))
        return results

    def _timing_case(self, ci: int, seed: int, dist: str) -> list[Any]:
        """Case ``ci``'s inputs of seed ``seed`` as a timed call saw them: mapped from the file this process wrote
        for the candidates (only it writes the session's inputs folder; candidates get read-only descriptors), with
        the generator left as drawing them would leave it. Drawing a large case again costs seconds per call
        (swiglu's [8192, 44032]: about 4.7 s), more than its seeds' draws the process can keep in memory."""
        assert self.task is not None
        kept = self.timing_inputs.get((ci, seed)) if dist == "task" else None
        if kept is None:
            return taskspec.generate_case(self.task, self.small, seed, dist, ci, self.marks.get(seed, ()))
        path, state = kept
        case = list(torch.load(path, weights_only=True, map_location="cpu", mmap=True))
        torch.set_rng_state(state)
        return case

    def _training_mode_free(self, cases: list[tuple[list[Any], list[torch.Tensor]]]) -> bool:
        """Whether the reference gives bitwise the same answers in training mode as in eval mode on these cases (no
        dropout, no batch statistics): then the candidate is called in both modes, since a kernel that reads
        ``self.training`` could otherwise be right only in the mode the verifier uses (a fresh model, same
        weights; the judged one stays untouched)."""
        try:
            model = self._build_model().train()
            return all(all(a.shape == b.shape and a.dtype == b.dtype and same_bits(a, b)
                           for a, b in zip(self._forward(model, inputs, ""), native))
                       for inputs, native in cases)
        except Exception:  # it does not even run in training mode: judge the candidate in eval mode only
            return False

    def _tolerances_for(self, key: tuple[int, int, float | None]) -> list[cmp.Tolerance]:
        ci = key[0]
        base = self.base_tolerance.get(ci) or []
        natives, refs = self.natives.get(key, []), self.refs.get(key, [])
        return [cmp.widened(t, n, r) for t, n, r in zip(base, natives, refs)]

    def reference(self, ci: int, seed: int,
                  scale: float | None = None) -> tuple[list[torch.Tensor], list[cmp.Tolerance]]:
        """The float64 reference outputs of case ``ci`` under ``seed`` and their tolerances (computed on first use)."""
        key = (ci, seed, scale)
        if key not in self.refs:
            self._compute_seed(seed, self.dists.get(seed, "task"), scale, only_case=None if scale is None else ci)
        if not self.tolerances.get(key):
            self.tolerances[key] = self._tolerances_for(key)
        if scale is not None:  # a timed call's rescaled inputs: used once
            self.natives.pop(key, None)
            return self.refs.pop(key), self.tolerances.pop(key)
        return self.refs[key], self.tolerances[key]

    def _build_model(self, init_inputs: list[Any] | None = None) -> torch.nn.Module:
        return self._construct_model(init_inputs).to(self.device).eval()

    def _construct_model(self, init_inputs: list[Any] | None = None) -> torch.nn.Module:
        """The task's model as every build of it in this session is: under the init seed, perturbed, on the CPU
        (``init_inputs``: other constructor arguments than the task's)."""
        assert self.task is not None
        torch.manual_seed(self.init_seed)
        try:
            model = self.task.model_cls(*(self.task.init_inputs() if init_inputs is None else init_inputs))
        except taskspec.TaskError:
            raise
        except Exception as exc:
            raise taskspec.TaskError(f"{self.task.path}: Model(*get_init_inputs()) raised "
                                     f"{type(exc).__name__}: {exc}") from exc
        perturb_parameters(model, self.perturb_seed)
        return model

    def _prepare_varied_init(self, first: list[tuple[list[Any], list[torch.Tensor], list[torch.Tensor]]]
                             ) -> list[Any] | None:
        """Other constructor arguments for the plain run, written with their model's tables to ``init-varied.pt``:
        each float argument scaled by a secret factor (0.5-0.8 or 1.25-2). None where the task has no float
        argument, or where the model cannot be built with them or its outputs stop being well defined or change
        dtype or shape on the first seed's inputs (a probability pushed past 1, say)."""
        assert self.task is not None and self.inputs_dir is not None
        given = list(self.task.init_inputs())
        draw = secrets.SystemRandom()
        varied = [v * draw.choice((draw.uniform(0.5, 0.8), draw.uniform(1.25, 2.0))) if type(v) is float and v
                  else v for v in given]
        if varied == given:
            return None
        try:
            native_model = self._build_model(varied)
            for inputs, native, _ref in first:
                out = self._forward(native_model, inputs, "")
                if [(o.shape, o.dtype) for o in out] != [(n.shape, n.dtype) for n in native] or \
                        not all(bool(torch.isfinite(o).all()) for o in out if o.is_floating_point()):
                    return None
            try:
                ref_model: torch.nn.Module | None = self._build_model(varied).to(torch.float64)
            except Exception:  # noqa: BLE001 - the native model's answers then, as for the task's own arguments
                ref_model = None
            torch.save({"init_inputs": varied, "tables": module_tables(self._construct_model(varied))},
                       self.inputs_dir / "init-varied.pt")
        except Exception:  # noqa: BLE001 - the task does not work with other arguments: it is checked as given
            return None
        self.varied_init, self.varied_models = varied, (native_model, ref_model)
        return varied

    def varied_reference(self, ci: int, seed: int) -> tuple[list[torch.Tensor], list[cmp.Tolerance]]:
        """Case ``ci``'s answers under ``seed`` for the model built with the varied constructor arguments, with
        tolerances widened from that model's own eager error (computed on first use, for every case of the seed)."""
        assert self.task is not None and self.varied_models is not None
        if (ci, seed) not in self.varied_refs:
            native_model, ref_model = self.varied_models
            cases = taskspec.generate_cases(self.task, self.small, seed, self.dists.get(seed, "task"),
                                            self.marks.get(seed, ()))
            for k, case in enumerate(cases):
                self.varied_refs[(k, seed)] = self._answers(native_model, ref_model, case, k,
                                                            f"case {k}, seed {seed}, other constructor arguments")
        return self.varied_refs[(ci, seed)]

    def step(self, req: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        """A secret in-place step of the model's trainable parameters, as an optimizer takes one between two calls
        (:func:`parameter_step`, drawn from ``req["key"]``): written to a file for the plain process (by parameter
        name), and a stepped copy of the model kept to answer ``compare``'s outputs marked ``stepped`` with that
        key. The reply's ``names``: the stepped parameters (none: nothing is trainable, and no file)."""
        assert self.task is not None
        key = int(req["key"])
        if not any(_steppable(p) for p in self.model_native.parameters()):
            return {"ok": True, "names": []}  # nothing to step: no copy of the model made
        native = copy.deepcopy(self.model_native)
        deltas = parameter_step(native, key)
        if not deltas:
            return {"ok": True, "names": []}
        while len(self.stepped) >= MAX_EVALUATIONS_KEPT:  # an evaluation long judged
            self.stepped.pop(next(iter(self.stepped)))
        ref = copy.deepcopy(native).to(torch.float64) if self.model_ref is not None else None
        self.stepped[key] = (native, ref)
        return {"ok": True, "names": sorted(deltas), "file": self._write_file(deltas)}

    def stepped_reference(self, ci: int, seed: int, key: int) -> tuple[list[torch.Tensor], list[cmp.Tolerance]]:
        """Case ``ci``'s answers under ``seed`` for the model stepped under ``key`` (computed on first use)."""
        found = self.stepped_refs.get((ci, seed, key))
        if found is None:
            native, ref = self.stepped[key]
            while len(self.stepped_refs) >= MAX_NEAR_KEPT:
                self.stepped_refs.pop(next(iter(self.stepped_refs)))
            found = self._answers(native, ref, self._base_case(ci, seed), ci,
                                  f"case {ci}, seed {seed}, parameters stepped")
            self.stepped_refs[(ci, seed, key)] = found
        return found

    def _answers(self, native_model: torch.nn.Module, ref_model: torch.nn.Module | None, inputs: list[Any], ci: int,
                 where: str) -> tuple[list[torch.Tensor], list[cmp.Tolerance]]:
        """Case ``ci``'s answers on ``inputs`` (float64 where ``ref_model`` is, else the native model's), with its
        tolerances widened from the native model's own error on them."""
        placed = [v.to(self.device) if isinstance(v, torch.Tensor) else v for v in inputs]
        native = self._forward(native_model, placed, where)
        ref = native if ref_model is None else \
            self._forward(ref_model, [_to_precision(v, torch.float64) for v in placed], "")
        base = self.base_tolerance.get(ci) or []
        return [r.detach() for r in ref], [cmp.widened(t, n, r) for t, n, r in zip(base, native, ref)]

    def near_duplicates(self, req: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        """Input sets like case ``req["case"]``'s under ``req["seed"]``, one of each kind :func:`kinds_for` names
        (:func:`evaluator.sandboxed.near.near_duplicate_patches`, random choices from keys derived from the secret
        ``req["key"]``), with their answers kept for ``compare``. Each travels as the values it replaces in the base
        set's file (a small file of its own, :data:`Patches`: the plain process applies them to a fresh copy of the
        base it holds). The reply's ``near``: ``{"patch", "key", "kind", "follows"}`` per kind made, the key to
        name in ``compare``; ``follows``: called right after the one before it, not after a call of the base."""
        assert self.task is not None
        ci, seed = int(req["case"]), int(req["seed"])
        base = self._base_case(ci, seed)  # read once: each kind copies what it changes
        kinds = kinds_for(base, self.task.keep_inputs)
        keys = random.Random(int(req["key"])).sample(range(1 << 62), len(kinds))
        made: list[dict[str, Any]] = []
        base_finite: list[torch.Tensor] | None = None
        for key, kind in zip(keys, kinds):
            following = kind in FOLLOWS  # called right after the kind it follows, which must be made
            if following and (not made or made[-1]["kind"] != FOLLOWS[kind]):
                continue
            inputs, patches = self._near_inputs(base, key, kind)
            if kind in SIGNED_KINDS:  # values new to the op: only where they stay in its domain
                if base_finite is None:
                    answers, _tolerances = self._answers(self.model_native, self.model_ref, base, ci,
                                                         f"case {ci}, seed {seed}")
                    base_finite = [a.isfinite() for a in answers]
                found = self._in_domain(inputs, base_finite, ci)
                if found is None:
                    continue
                self._keep_near_answers((ci, seed, key), found)
            while len(self.near_made) >= MAX_NEAR_MADE:  # an evaluation long judged
                self.near_made.pop(next(iter(self.near_made)))
            self.near_made[(ci, seed, key)] = kind
            self._near_answers(ci, seed, key, inputs)
            made.append({"patch": self._write_file(patches), "key": key, "kind": kind, "follows": following})
        return {"ok": True, "near": made}

    def _in_domain(self, inputs: list[Any], base_finite: list[torch.Tensor],
                   ci: int) -> tuple[list[torch.Tensor], list[cmp.Tolerance]] | None:
        """The reference's answers for ``inputs`` (values new to the op) where it gives them without an error and
        finite wherever it answered the base set so; else None (out of the op's domain)."""
        try:
            found = self._answers(self.model_native, self.model_ref, inputs, ci,
                                  f"case {ci}, a near-duplicate input set")
        except Exception:  # noqa: BLE001 - the op refuses them: out of its domain
            return None
        answers = found[0]
        inside = len(answers) == len(base_finite) and all(
            a.shape == f.shape and bool((a.isfinite() | ~f).all()) for a, f in zip(answers, base_finite))
        return found if inside else None

    def _keep_near_answers(self, at: tuple[int, int, int],
                           answers: tuple[list[torch.Tensor], list[cmp.Tolerance]]) -> None:
        while len(self.near_refs) >= MAX_NEAR_KEPT:
            self.near_refs.pop(next(iter(self.near_refs)))
        self.near_refs[at] = answers

    def _base_case(self, ci: int, seed: int) -> list[Any]:
        """Case ``ci``'s input set under ``seed`` as candidates were given it, on this process's device: read from the
        file written for them (the bytes a near-duplicate's patches apply to in the plain process), else drawn
        again."""
        assert self.task is not None
        path = self.input_files.get((ci, seed))
        if path is not None:
            values = list(torch.load(path, weights_only=True, map_location="cpu", mmap=True))
        else:
            values = taskspec.generate_case(self.task, self.small, seed, self.dists.get(seed, "task"), ci,
                                            self.marks.get(seed, ()))
        # on the device: the near-duplicates are cut from it and answered there (no host copy of a whole set each)
        return [v.to(self.device) if isinstance(v, torch.Tensor) else v for v in values]

    def _near_inputs(self, base: list[Any], key: int, kind: str) -> tuple[list[Any], Patches]:
        """A near-duplicate of ``base`` of its own (a reference that writes into its inputs changes no other's),
        and its patches."""
        assert self.task is not None
        patches = near_duplicate_patches(base, key, kind, self.task.keep_inputs)
        own = [v.clone() if isinstance(v, torch.Tensor) and patch is None else v for v, patch in zip(base, patches)]
        return apply_patches(own, patches), patches

    def _near_answers(self, ci: int, seed: int, key: int,
                      inputs: list[Any] | None = None) -> tuple[list[torch.Tensor], list[cmp.Tolerance]]:
        """The answers for a near-duplicate this process made: kept from its making, else computed again (they
        are a pure function of case, seed, key and kind, so evaluations in flight never evict each other's)."""
        found = self.near_refs.get((ci, seed, key))
        if found is not None:
            return found
        if inputs is None:
            inputs, _patches = self._near_inputs(self._base_case(ci, seed), key, self.near_made[(ci, seed, key)])
        answers = self._answers(self.model_native, self.model_ref, inputs, ci,
                                f"case {ci}, seed {seed}, a near-duplicate input set")
        self._keep_near_answers((ci, seed, key), answers)
        return answers

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

    def baselines(self, req: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        """Time eager and torch.compile on the timing input sets (CUDA only), and write those sets for candidates."""
        from evaluator.sandboxed.timing_ops import reference_baselines

        return reference_baselines(self, req)

    def handoff_probe(self, req: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        """The session's hand-off probe (:mod:`evaluator.handoff_probe`): ``works`` when the one output arrived
        through VMM and holds exactly the bytes drawn from the parent's seed."""
        with _owned(fds) as owned:
            outputs = req.get("outputs") or [{}]
            sent = outputs[0].get("sent") if isinstance(outputs[0], dict) else None
            if not isinstance(sent, dict) or "vmm" not in sent:
                return {"ok": True, "works": False, "problem": "the probe did not arrive as a VMM descriptor"}
            try:
                received = handoff.receive(sent, self.device, req.get("key"), owned)
            except handoff.HandoffError as exc:
                return {"ok": True, "works": False, "problem": f"{exc.kind}: {exc}"}
            expected = handoff.probe_tensor(int(req["seed"]), int(req["nbytes"]), self.device)
            same = (len(received) == 1 and received[0].dtype == expected.dtype
                    and received[0].shape == expected.shape and torch.equal(received[0], expected))
            return {"ok": True, "works": same, "problem": "" if same else "the probe's bytes arrived changed"}

    def compare(self, req: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        """Judge each output a candidate process sent: ``req["outputs"]`` items ``{"name", "case", "seed",
        "scale", "group", "sent"}`` (``sent``: how it travelled, see :mod:`evaluator.sandboxed.handoff`; ``fds``:
        the VMM allocations' descriptors, which this request owns from here: each is closed once, below).

        Outputs of one ``group`` were computed from identical inputs: they must agree bitwise (unless the task
        declares NONDETERMINISTIC_OK). ``handoff_unavailable`` in the reply: the VMM hand-off failed here, so
        nothing was compared; the caller has the candidate write the same outputs as files and asks again.
        ``vmm_imported``: how many outputs came through VMM (the parent's evidence that it works here)."""
        with _owned(fds) as owned:
            return self._compare(req, owned)

    def _compare(self, req: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        results = []
        imported = 0
        assert self.task is not None
        for item in req["outputs"]:
            ci, seed = int(item["case"]), int(item["seed"])
            scale = item.get("scale")
            if item.get("near") is not None and (ci, seed, int(item["near"])) in self.near_made:
                refs, tolerances = self._near_answers(ci, seed, int(item["near"]))
            elif item.get("stepped") is not None and int(item["stepped"]) in self.stepped:
                refs, tolerances = self.stepped_reference(ci, seed, int(item["stepped"]))
            elif item.get("varied_init") and self.varied_models is not None:
                refs, tolerances = self.varied_reference(ci, seed)
            else:
                refs, tolerances = self.reference(ci, seed, None if scale is None else float(scale))
            try:
                outs = handoff.receive(item["sent"], self.device, req.get("key"), fds)
            except handoff.HandoffError as exc:
                if exc.kind == "unavailable":
                    return {"ok": True, "results": [], "handoff_unavailable": str(exc)}
                reason = {"tampered": "cheat_suspected"}.get(exc.kind, "incorrect")
                results.append({"name": item["name"], "ok": False, "problem": str(exc), "reason": reason,
                                "outputs": []})
                continue
            imported += "vmm" in item["sent"]
            group = item.get("group")
            result = self._as_group_first(int(req.get("key") or 0), group, outs) if group else None
            if result is None:  # not bitwise the group's first outputs: judged in full
                result = self._compare_one(ci, refs, tolerances, outs)
                if result["ok"] and group:
                    problem = self._same_as_group(int(req.get("key") or 0), group, outs, result)
                    if problem:
                        result = {"ok": False, "problem": problem, "outputs": result["outputs"]}
            results.append({"name": item["name"], **result})
            del outs
        return {"ok": True, "results": results, "vmm_imported": imported}

    def _groups_of(self, key: int) -> dict[str, tuple[list[torch.Tensor], dict[str, Any]]]:
        if key not in self.groups:
            while len(self.groups) >= MAX_EVALUATIONS_KEPT:  # the oldest evaluation has long finished
                self.groups.pop(next(iter(self.groups)))
            self.groups[key] = {}
        return self.groups[key]

    def _as_group_first(self, key: int, group: str, outs: Any) -> dict[str, Any] | None:
        """The judgement of the group's first outputs where ``outs`` are bitwise the same tensors (the same
        bytes judge the same way: a repeated call, or an output read again after the last call); else None."""
        first = self._groups_of(key).get(group)
        if first is None or not isinstance(outs, list) or len(outs) != len(first[0]) or \
                not all(type(o) is torch.Tensor and same_bits(x, o) for x, o in zip(first[0], outs)):
            return None
        return first[1]

    def _same_as_group(self, key: int, group: str, outs: list[Any], result: dict[str, Any]) -> str | None:
        """None where ``outs`` (judged ``result``) agree with the group's first outputs, which the first call
        records; else what differs. Bitwise, unless the task declares NONDETERMINISTIC_OK."""
        groups = self._groups_of(key)
        first = groups.get(group)
        if first is None:
            groups[group] = ([o.detach().clone() for o in outs], result)
            return None
        assert self.task is not None
        for k, (x, y) in enumerate(zip(first[0], outs)):
            if self.task.nondeterministic_ok:
                same = x.shape == y.shape and torch.allclose(x, y, rtol=1e-3, atol=1e-5, equal_nan=True)
            else:
                same = same_bits(x, y)
            if not same:
                return (f"output {k} differs between runs on identical inputs (a race or uninitialised memory); "
                        "set NONDETERMINISTIC_OK in the task if atomics make this expected")
        return None

    def _compare_one(self, ci: int, refs: list[torch.Tensor], tolerances: list[cmp.Tolerance],
                     outs: Any) -> dict[str, Any]:
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
            per_output.append(cmp.compare(out.to(ref.device), ref, tolerances[k]).to_dict())
        ok = all(p["ok"] for p in per_output)
        problem = "; ".join(f"output {k}: {p['problem']}" for k, p in enumerate(per_output) if not p["ok"])
        return {"ok": ok, "problem": problem, "outputs": per_output}
