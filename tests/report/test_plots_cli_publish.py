"""Plots (deterministic, readable on light and dark), the ``kernelevo report`` command on real run directories,
and the bot committing the PNGs into a follow-up branch on the fake GitHub."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kernelevo.cli import app
from kernelevo.report.build import build, read_records
from kernelevo.report.plots import plot_names, render_plots

ROOT = Path(__file__).parents[2]


def test_plots_are_deterministic_and_have_a_white_background(gpu_run):
    import matplotlib.image

    report = build(read_records(gpu_run))
    assert plot_names(report) == ["speedup", "fitness", "rejections", "lineage"]
    svg, again = render_plots(report, "svg"), render_plots(report, "svg")
    assert svg == again and all(b"<svg" in data for data in svg.values())
    assert not any(b"Date" in data or b"matplotlib.org" in data for data in svg.values())
    png = render_plots(report, "png")
    assert png == render_plots(report, "png")
    for data in png.values():
        pixels = matplotlib.image.imread(io.BytesIO(data), format="png")
        corner = pixels[0, 0]
        assert tuple(corner[:3]) == (1.0, 1.0, 1.0) and (len(corner) == 3 or corner[3] == 1.0)  # opaque white


def test_the_report_command_writes_markdown_with_plots_and_html(gpu_run, tmp_path):
    runner = CliRunner()
    out = tmp_path / "out"
    result = runner.invoke(app, ["report", str(gpu_run), "--out", str(out)])
    assert result.exit_code == 0, result.output
    text = (out / "report.md").read_text()
    assert "![Speedup per case against each baseline](plots/speedup.png)" in text
    assert sorted(p.name for p in (out / "plots").iterdir()) == ["fitness.png", "lineage.png", "rejections.png",
                                                                 "speedup.png"]
    result = runner.invoke(app, ["report", str(gpu_run / "summary.json"), "--format", "html", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "<!DOCTYPE html>" in (out / "report.html").read_text()
    stdout = runner.invoke(app, ["report", str(gpu_run)])
    assert stdout.exit_code == 0 and stdout.output.startswith("## KernelEvo:") and "![" not in stdout.output
    for args, message in ((["report", str(tmp_path / "nowhere")], "no such run directory"),
                          (["report", str(gpu_run), "--format", "pdf"], "--format must be md or html"),
                          (["report", str(tmp_path)], "is not a run directory")):
        bad = runner.invoke(app, args)
        assert bad.exit_code == 2 and message in bad.output, bad.output


@pytest.mark.slow
def test_the_report_of_a_real_cpu_search(tmp_path):
    """``kernelevo optimize --device cpu`` with the real verifier (one kernel with wrong math is rejected), then
    ``kernelevo report`` on its run directory, both as subprocesses."""
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "scale_add.py").write_text((ROOT / "tests" / "search" / "data" / "scale_add.py").read_text())
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "tests" / "search"), str(ROOT)])}
    search = subprocess.run(
        [sys.executable, "-m", "kernelevo.cli", "optimize", "scale_add.py", "--proposer",
         "search_doubles:KnownGoodProposer", "--device", "cpu", "--runs-dir", str(tmp_path / "runs"),
         "--generation-size", "2", "--seed", "7", "--budget-candidates", "3", "--plateau", "50", "--json-lines"],
        cwd=repo, env=env, capture_output=True, text=True, timeout=600)
    assert search.returncode == 0, search.stderr[-3000:]
    run_dir = Path(json.loads(search.stdout.splitlines()[-1])["run_dir"])
    out = tmp_path / "report"
    report = subprocess.run([sys.executable, "-m", "kernelevo.cli", "report", str(run_dir), "--out", str(out)],
                            env=env, capture_output=True, text=True, timeout=300)
    assert report.returncode == 0, report.stderr
    text = (out / "report.md").read_text()
    assert "**Result (verified, not timed):**" in text and "| incorrect | 1 |" in text
    assert "GPU time: none (a CPU run)" in text and "kernelevo eval --task" in text
    assert (out / "plots" / "fitness.png").is_file() and (out / "plots" / "rejections.png").is_file()


def test_the_bot_commits_the_plots_and_the_pr_body_shows_them(gpu_run):
    """The follow-up's files and body published through the bot's GitHub client to the fake GitHub."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    from github_server import FakeGitHub

    from bot import publish
    from bot.auth import InstallationTokens
    from bot.github_api import GitHubAPI, token_exchange
    from bot.report import follow_up

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption()).decode()
    public = key.public_key().public_bytes(serialization.Encoding.PEM,
                                           serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    summary = json.loads((gpu_run / "summary.json").read_text())
    result = {k: v for k, v in summary.items() if k != "run_dir"}
    repo = "acme/models"
    with FakeGitHub(app_id=77, public_key=public) as fake:
        fake.add_repo(repo, {"ops/norm.py": "def rms_norm(x):\n    return x\n"})
        gh = GitHubAPI(fake.base_url, 77, InstallationTokens(77, private, token_exchange(fake.base_url)))
        branch = publish.branch_name("rms_norm", "main")
        made = follow_up(repo, "ops/norm.py::rms_norm", result, {"head_sha": "b" * 40, "backend": "triton"},
                         "kernels/rms_norm", branch=branch, origin="#5",
                         archive=read_records(gpu_run).archive)
        files = {"kernels/rms_norm/kernel.py": b"# kernel\n", **made.files}
        done = publish.publish(gh, repo, base_branch="main", branch=branch, files=files, title="KernelEvo",
                               body=made.body, message="kernelevo: verified kernel", max_open_prs=5)
        assert done.action == "created"
        tree = fake.trees[fake.commits[fake.refs[repo][branch]]["tree"]]
        for name in ("speedup", "fitness", "rejections", "lineage"):
            path = f"kernels/rms_norm/plots/{name}.png"
            assert fake.blobs[tree[path]] == made.files[path] and made.files[path].startswith(b"\x89PNG")
            url = f"https://github.com/{repo}/blob/{branch}/{path}?raw=true"
            assert f"]({url})" in made.body
        pull = next(p for p in fake.pulls[repo].values() if p["head"]["ref"] == branch)
        assert pull["body"] == made.body and "(plots/speedup.png)" in fake.blobs[
            tree["kernels/rms_norm/report.md"]].decode()


def test_blob_urls_are_built_only_from_valid_names():
    from bot.publish import blob_url

    assert blob_url("o/r", "kernelevo/x/main", "kernels/x/plots/a.png", raw=True) == (
        "https://github.com/o/r/blob/kernelevo/x/main/kernels/x/plots/a.png?raw=true")
    for repo, branch, path in (("o/r/x", "b", "p"), ("o/r", "b", "../p"), ("o/r", "b c", "p"),
                               ("o/r", "b", "p)](javascript:x"), ("o/r", "b", "/etc/p")):
        with pytest.raises(ValueError):
            blob_url(repo, branch, path)
