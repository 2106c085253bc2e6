"""What a first-time user meets in the CLI (issue 12, "Should fix"), through the real CLI: help that keeps its
defaults and shows flags as flags, ``--version`` and ``-h``; the same precise message from ``optimize`` and
``eval`` for a task file without ``get_inputs``; an invalid ``.github/kernelevo.yml`` refused by ``optimize .``,
``optimize FILE`` and ``verify`` with its file, key and line; staleness advice naming the local command; and
the ETA as a pure function of the measured pace and the budget."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kernelevo import __version__
from kernelevo.cli import app
from kernelevo.commands.optimize_cmd import config_budget
from kernelevo.discovery import discover
from kernelevo.kernel_store import envelope_from_cases, write_kernel
from kernelevo.repo_config import load_repo_config
from kernelevo.search.budget import Budget
from kernelevo.search.progress import PaceTracker, RunPace, estimate_eta, plain_line
from kernelevo.search.result import Progress

FIXTURE = Path(__file__).parents[1] / "fixtures" / "repos" / "verify"  # ops/scale.py::scale_shift

TASK_WITHOUT_GET_INPUTS = '''import torch
from torch import nn


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


def get_init_inputs():
    return []
'''
CANDIDATE = '''import torch
from torch import nn


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
'''


def invoke(*args: str):
    return CliRunner().invoke(app, list(args))


@pytest.fixture
def repo(tmp_path) -> Path:
    root = tmp_path / "repo"
    shutil.copytree(FIXTURE, root)
    (root / ".git").mkdir()  # a repository root, as find_repo_root sees one
    return root


# -- help, version ---------------------------------------------------------------------------------------------------

def test_optimize_help_keeps_every_default_and_shows_flags_as_flags():
    result = invoke("optimize", "--help")
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())  # help wraps lines
    assert "[default: the bundled RMSNorm example]" in text
    assert "[default: runs/, or KERNELEVO_RUNS_DIR]" in text
    assert "[default: 32, or budgets.candidates of .github/kernelevo.yml]" in text
    assert "[default: 6; 2 on cpu]" in text and "[default: triton]" in text
    assert "<bool>" not in result.output
    flag_line = next(line for line in result.output.splitlines() if line.strip().startswith("--write-kernel"))
    assert flag_line.split()[1] == "store"  # no type column: a flag takes no value
    assert invoke("optimize", "-h").output == result.output


def test_version_and_short_help():
    version = invoke("--version")
    assert version.exit_code == 0 and version.output.strip() == f"kernelevo {__version__}"
    short = invoke("-h")
    assert short.exit_code == 0 and "optimize" in short.output and "--version" in short.output


# -- a task file without get_inputs --------------------------------------------------------------------------------

def test_optimize_and_eval_say_the_same_precise_thing_about_a_missing_get_inputs(tmp_path):
    task, candidate = tmp_path / "task.py", tmp_path / "candidate.py"
    task.write_text(TASK_WITHOUT_GET_INPUTS)
    candidate.write_text(CANDIDATE)
    optimize = invoke("optimize", str(task), "--device", "cpu", "--runs-dir", str(tmp_path / "runs"))
    evaluate = invoke("eval", "--task", str(task), "--candidate", str(candidate))
    assert optimize.exit_code == 2 and evaluate.exit_code == 2, (optimize.output, evaluate.output)
    said = [r.output.split(": ", 1)[1] for r in (optimize, evaluate)]  # after "kernelevo optimize:" / "error:"
    assert said[0] == said[1]
    message = said[0]
    assert message.startswith(f"{task}: ") and "has no get_inputs()" in message and "add get_inputs()" in message
    assert "def get_inputs():\n    # one call's arguments of Model.forward, as a list\n    return [" in message
    assert "get_init_inputs" not in message  # it has that one
    assert not (tmp_path / "runs").exists()


# -- .github/kernelevo.yml -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("config, key, line", [
    ("budgets:\n  minutes: -3\n", "budgets.minutes", 2),
    ("budgets:\n  candidatez: 4\n", "budgets.candidatez", 2),
    ("backends: [triton]\nbudgets: 5\n", "budgets", 2),  # pydantic would name its model class here
])
def test_an_invalid_config_stops_optimize_of_the_repo_or_a_file_and_verify(repo, config, key, line):
    (repo / ".github").mkdir()
    (repo / ".github" / "kernelevo.yml").write_text(config)
    runs = repo / "runs"
    for args in (["optimize", str(repo), "--device", "cpu", "--runs-dir", str(runs)],
                 ["optimize", str(repo / "ops" / "scale.py"), "--device", "cpu", "--runs-dir", str(runs)],
                 ["verify", str(repo)]):
        result = invoke(*args)
        assert result.exit_code == 2, (args, result.output)
        assert f"{repo / '.github' / 'kernelevo.yml'}: 1 problem" in result.output
        assert f"line {line}: {key}: " in result.output
        for internal in ("Budgets", "RepoConfig", "ValidationError", "Error:", "Input should"):
            assert internal not in result.output, (internal, result.output)
    assert not runs.exists()


def test_config_budgets_set_in_the_file_are_the_local_defaults():
    config = load_repo_config("budgets:\n  candidates: 3\n  money_usd: 0.5\n")
    assert config_budget(config.budgets) == {"candidates": 3, "usd": 0.5}  # keys left out keep local defaults
    assert config_budget(load_repo_config("").budgets) == {}


# -- staleness advice ------------------------------------------------------------------------------------------------

def test_staleness_advice_names_the_local_command(repo):
    import torch

    op = next(o for o in discover(repo).ops if o.qualname == "scale_shift")
    envelope = envelope_from_cases([(torch.randn(4, 37),)], device_type="cpu", capabilities=None, backend="triton")
    write_kernel(repo, op, (repo / "kernel_ok.py").read_text(), {"verdict": "accepted"}, envelope)
    (repo / "ops" / "scale.py").write_text((repo / "ops" / "scale.py").read_text().replace("+ 1.0", "+ 2.0"))
    result = invoke("verify", str(repo), "--json")
    assert result.exit_code == 1
    assert "kernelevo optimize ops/scale.py --op scale_shift --write-kernel" in result.output
    assert "/kernelevo" not in result.output


# -- ETA -------------------------------------------------------------------------------------------------------------

def pace(**kw) -> RunPace:
    base = dict(evaluated=2, per_candidate_s=2.0, elapsed_s=36.0, candidates_per_generation=None,
                generations_without_improvement=0, in_generation=0)
    return RunPace(**{**base, **kw})


def test_eta_is_the_measured_pace_times_what_the_budget_leaves():
    eta = estimate_eta(Budget(candidates=32, plateau_generations=None), pace())
    assert eta is not None and eta.seconds == pytest.approx(60.0) and eta.bound == "candidates budget"


def test_eta_follows_the_plateau_when_it_ends_the_run_first():
    """The issue's run: 9 min promised (32 candidates at the first candidates' rate), 1m18s taken (a CPU run
    stops 2 generations after its first accepted kernel)."""
    eta = estimate_eta(Budget(candidates=32, plateau_generations=2),
                       pace(evaluated=3, candidates_per_generation=3.0, generations_without_improvement=1,
                            in_generation=1))
    assert eta is not None and eta.bound == "plateau" and eta.seconds == pytest.approx((1 * 3 - 1) * 2.0)


def test_eta_is_capped_by_the_time_budget_and_unknown_without_a_pace():
    eta = estimate_eta(Budget(candidates=1000, minutes=1.0), pace(elapsed_s=50.0))
    assert eta is not None and eta.bound == "time budget" and eta.seconds == pytest.approx(10.0)
    assert estimate_eta(Budget(candidates=32), pace(per_candidate_s=None)) is None
    only_time = estimate_eta(Budget(candidates=32, minutes=2.0), pace(per_candidate_s=None, elapsed_s=30.0))
    assert only_time is not None and only_time.seconds == pytest.approx(90.0)


def event(kind: str, evaluated: int, elapsed: float, generation: int = 0, best: float = 0.0,
          last_kind: str = "evaluated") -> Progress:
    last = {"id": f"g{generation}-{evaluated}", "operator": "fresh", "kind": last_kind, "accepted": True,
            "reason": "ok"} if kind == "candidate" else None
    return Progress(generation=generation, evaluated=evaluated, accepted=evaluated, best_fitness=best,
                    best_speedup_vs_eager=None, best_speedup_vs_compile=None, tokens=0, cost_usd=0.0,
                    elapsed_s=elapsed, eta_s=None, event=kind, last=last)


def test_the_pace_excludes_setup_time_and_duplicates():
    tracker = PaceTracker()
    tracker.observe(event("candidate", 1, 30.0))  # the first one waited for the op's setup
    tracker.observe(event("candidate", 2, 32.0))
    tracker.observe(event("candidate", 2, 32.0, last_kind="duplicate"))
    tracker.observe(event("candidate", 3, 34.0))
    tracker.observe(event("generation", 3, 34.0, generation=1, best=1.0))
    measured = tracker.pace()
    assert measured is not None and measured.per_candidate_s == pytest.approx(2.0)
    assert measured.candidates_per_generation == pytest.approx(3.0) and measured.generations_without_improvement == 0
    tracker.observe(event("generation", 3, 34.0, generation=2, best=1.0))
    assert tracker.pace().generations_without_improvement == 1  # type: ignore[union-attr]
    eta = tracker.eta(Budget(candidates=32, plateau_generations=2))
    # one generation left at 1.5 candidates per generation (3 in 2), 2 s each
    assert eta is not None and eta.bound == "plateau" and eta.seconds == pytest.approx(1 * 1.5 * 2.0)


def test_plain_lines_say_what_happened_without_a_terminal():
    budget = Budget(candidates=32)
    line = plain_line("ops/a.py::f", event("candidate", 2, 12.0), budget, None)
    assert line is not None and line.startswith("kernelevo optimize ops/a.py::f: candidate g0-2 (fresh): accepted")
    assert "2 / 32 evaluated" in line and "ETA ?" in line
    duplicate = plain_line("f", event("candidate", 2, 12.0, last_kind="duplicate"), budget, None)
    assert duplicate is not None and "duplicate, not counted" in duplicate
    done = Progress(**{**event("generation", 8, 50.0).to_dict(), "event": "done", "stop_reason": "plateau"})
    assert "stopped (plateau)" in (plain_line("f", done, budget, None) or "")


# -- the README's two commands -------------------------------------------------------------------------------------

def test_the_first_command_installs_the_cpu_search_only_and_ci_runs_the_readme_test_command():
    import re

    root = Path(__file__).parents[2]
    readme = (root / "README.md").read_text(encoding="utf-8")
    block = readme.split("```bash\n", 1)[1].split("```", 1)[0].splitlines()
    first, tests = block[0], block[1].split("#", 1)[0].strip()
    assert '-e ".[triton]"' in first and "[dev]" not in first and first.endswith("kernelevo optimize --device cpu")
    assert tests.endswith("python3 -m pytest -q") and '-e ".[dev]"' in tests
    ci = (root / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert tests in ci, "the README's test command must be a line of .ci/run, exactly"
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+

    extras = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert not any(re.match(r"(nvidia|cuda)", d) for d in extras["dependencies"])  # CUDA packages only in extras
    assert not any(re.match(r"(nvidia|cuda)", d) for d in extras["optional-dependencies"]["triton"])


def test_no_file_cites_a_design_document_the_repository_does_not_have():
    """Modules once cited a design document that was never committed; what they relied on is in ARCHITECTURE.md
    and docs/verifier.md now, and a citation must not come back."""
    root = Path(__file__).parents[2]
    citing = []
    for path in root.rglob("*"):
        parts = path.relative_to(root).parts
        if not path.is_file() or parts[0] in (".git", "runs") or "__pycache__" in parts or ".egg-info" in str(path):
            continue
        if path.suffix not in (".py", ".md", ".yaml", ".yml", ".toml", ".txt", ".j2", ".sh", ".cfg", ".json"):
            continue
        if path == Path(__file__):
            continue
        if "DESIGN" + ".md" in path.read_text(encoding="utf-8", errors="replace"):
            citing.append(str(path.relative_to(root)))
    assert not citing, citing


def test_the_summary_names_the_constants_a_kernel_hard_codes_and_what_dispatch_covers():
    from kernelevo.envelope import hard_coded_floats, verified_scope_lines

    kernel = "import triton\n\n@triton.jit\ndef k(x, y):\n    y = x / 0.7 * 1.0 + 0.0\n\nEPS = 1e-05\n"
    assert hard_coded_floats(kernel) == [0.7, 1e-05]  # 1.0 and 0.0 are every kernel's, not the op's
    module = "class ModelNew:\n    def __init__(self, dim, eps=1e-03, *, scale=2.5):\n        self.eps = eps\n"
    assert hard_coded_floats(module) == []  # defaults: the module is built with the task's own arguments
    assert hard_coded_floats(module + "\ndef f(x, t=0.3):\n    return x / 0.3\n") == [0.3]  # the body's 0.3
    envelope = {"device_type": "cpu", "backend": "triton", "args": [
        {"kind": "tensor", "dtypes": ["float32"], "rank": 2, "dims": [{"min": 4, "max": 8}, {"min": 64, "max": 64}]},
        {"kind": "value", "type": "float"}]}
    lines = verified_scope_lines(envelope, [["float32[4, 64]", "0.7"], ["float32[8, 64]", "0.7"]], kernel,
                                 small_only=True)
    text = "\n".join(lines)
    assert "Verified on cpu for exactly 2 case(s): (float32[4, 64], 0.7); (float32[8, 64], 0.7)." in text
    assert "arg 0: float32[4..8, 64]; arg 1: any float" in text
    assert "small_inputs were checked" in text and "not widened by rescaling" in text
    assert "The kernel hard-codes 0.7, 1e-05" in text and "does not pin them" in text
    exact = verified_scope_lines({**envelope, "shapes": [[[4, 64], None], [[8, 64], None]]},
                                 [["float32[4, 64]", "0.7"], ["float32[8, 64]", "0.7"]], kernel, small_only=True)
    assert "arg 0: float32; arg 1: any float; shapes exactly those of one verified case ([4, 64] or [8, 64])" in \
        "\n".join(exact)
