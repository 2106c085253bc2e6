"""The bot's side of a job: re-check the pinned SHA, mirror progress, publish the results.

:class:`BotJobHooks` plugs into :class:`kernelevo.jobs.LocalRunner` (and later the Celery queue).
``before_start`` runs synchronously in the job's thread; everything else is put on the work queue so
that GitHub rate limits defer it instead of blocking the search.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import time
from pathlib import Path

from bot import checks, context, publish, report, trust
from bot.github_api import GitHubAPI, GitHubError
from bot.ratelimit import Deferred
from bot.report import code
from kernelevo.jobs import JobHooks, JobRequest, JobStatus

log = logging.getLogger(__name__)


def _iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


class BotJobHooks(JobHooks):
    """Job callbacks bound to a :class:`BotContext` (set ``ctx`` before the first job runs)."""

    def __init__(self) -> None:
        self.ctx: context.BotContext | None = None

    def before_start(self, job_id: str, request: JobRequest) -> str | None:
        """Refuse to start unless the PR is open, its head is still the pinned SHA, and (for forks and
        untrusted authors) that SHA is still the approved one."""
        ctx = self.ctx
        with ctx.lock:
            link = ctx.links.get(job_id)
        if link is not None:
            link.ready.wait(60)  # the job's check run exists before the job reports anything
        if request.kind != "pr":
            return None
        gh = ctx.github(request.installation_id)
        try:
            pull = gh.get_pull(request.repo, request.pr_number)
            if pull.get("state") != "open":
                return "the PR was closed before the job started"
            head = pull["head"]["sha"]
            if head != request.head_sha:
                return (f"the PR head moved from {request.head_sha[:12]} to {head[:12]} before the job "
                        "started; comment `/kernelevo optimize` again")
            default_branch = (gh.get_repo(request.repo) or {}).get("default_branch", "main")
            config, error = context.load_config(gh, request.repo, default_branch)
            if error:
                return error
            author_perm = gh.permission(request.repo, pull["user"]["login"])
            requester_perm = gh.permission(request.repo, request.requested_by)
            minimum = config.trigger.min_permission
            if (trust.needs_approval(fork=trust.is_fork(pull), author_permission=author_perm, minimum=minimum)
                    or not trust.meets(requester_perm, minimum)):
                if ctx.approvals.approved_sha(request.repo, request.pr_number) != head:
                    return f"commit {head[:12]} is not approved; a maintainer must comment `/kernelevo approve`"
        except Deferred as exc:
            return f"GitHub is rate limiting the bot ({exc.reason}); try again in a few minutes"
        return None

    def on_progress(self, job_id: str, request: JobRequest, op_id: str, progress: dict) -> None:
        """Mirror progress to the job's check run, at most once per interval."""
        ctx = self.ctx
        link = ctx.links.get(job_id)
        if link is None or not link.ready.is_set() or link.check_run_id is None or not ctx.throttle.ready(job_id):
            return
        status = ctx.jobs.status(job_id)
        summary = checks.progress_summary(status.progress if status else {op_id: progress})
        with link.check_lock:
            link.progress_seq += 1
            seq = link.progress_seq

        def update() -> None:  # queued updates may run out of order: never write an older one
            with link.check_lock:
                if link.finished or seq < link.sent_seq:
                    return
                ctx.github(request.installation_id).update_check_run(
                    request.repo, link.check_run_id, status="in_progress",
                    output={"title": "Searching", "summary": summary})
                link.sent_seq = seq

        ctx.work.submit(update, name=f"progress {job_id}")

    def on_finished(self, job_id: str, request: JobRequest, status: JobStatus) -> None:
        """Publish (on the work queue): follow-up PRs, the check run's conclusion, the status comment."""
        ctx = self.ctx

        def finish() -> None:
            try:
                finish_job(ctx, job_id, request, status)
            except Deferred:
                raise
            except Exception as exc:  # never leave the check run "queued" forever
                log.exception("finishing %s failed", job_id)
                link = ctx.links.get(job_id)
                if link is not None and link.check_run_id is not None:
                    link.finished = True
                    checks.finish_job_run(ctx.github(request.installation_id), request.repo, link.check_run_id,
                                          conclusion="failure", title="Reporting the result failed",
                                          summary=f"{report.escape_md(exc)}; comment `/kernelevo optimize` to retry",
                                          completed_at=_iso(ctx.clock()))

        ctx.work.submit(finish, name=f"finish {job_id}")


def finish_job(ctx: context.BotContext, job_id: str, request: JobRequest, status: JobStatus) -> None:
    """Publish each op's result (or say why not), complete the check run, refresh the comment."""
    gh = ctx.github(request.installation_id)
    with ctx.lock:
        link = ctx.links.get(job_id)
    if link is None:
        link = context.JobLink(request.repo, request.pr_number, request.installation_id)
        link.ready.set()
    link.ready.wait(60)
    results = (status.result or {}).get("ops", {}) if status.state == "succeeded" else {}
    default_branch = gh.get_repo(request.repo).get("default_branch", "main")
    config, _ = context.load_config(gh, request.repo, default_branch)
    published_any = False
    for op_id, result in results.items():
        if op_id in link.outcomes and "#" in link.outcomes[op_id]:
            continue  # already published before a deferral
        assessment = report.assess(result)
        if not assessment.publish:
            link.outcomes[op_id] = f"no PR: {assessment.reason}"
            continue
        try:
            outcome = publish_result(ctx, gh, request, op_id, result, config.max_open_prs, fork=link.fork)
        except (GitHubError, LookupError, OSError, ValueError) as exc:
            log.exception("publishing %s of %s failed", op_id, job_id)
            link.outcomes[op_id] = (f"publishing failed, nothing was pushed ({report.escape_md(exc)}); "
                                    "comment `/kernelevo optimize` to retry")
            continue
        published_any |= outcome.action in ("created", "updated")
        link.outcomes[op_id] = (f"#{outcome.number} ({outcome.action}): {assessment.reason}"
                                if outcome.number else
                                f"not published: the repo already has {config.max_open_prs} open kernel PRs "
                                "(max_open_prs); merge or close some")
    failed = any(text.startswith("publishing failed") for text in link.outcomes.values())
    conclusion, title = _conclusion(status, published_any)
    if failed:
        conclusion, title = "failure", "Publishing failed"
    summary = "\n".join(f"- {code(op)}: {text}" for op, text in link.outcomes.items()) or (status.error or "")
    if link.check_run_id is not None:
        with link.check_lock:
            checks.finish_job_run(gh, request.repo, link.check_run_id, conclusion=conclusion, title=title,
                                  summary=summary, completed_at=_iso(ctx.clock()))
            link.finished = True
    if request.pr_number is not None:
        context.refresh_status(ctx, gh, request.repo, request.pr_number, f"{job_id}: {title}.")


def _conclusion(status: JobStatus, published: bool) -> tuple[str, str]:
    if status.state == "succeeded":
        return "success" if published else "neutral", ("Published a faster kernel" if published
                                                       else "Finished; nothing to publish")
    if status.state == "cancelled":
        return "cancelled", f"Cancelled: {status.error or 'by request'}"
    return "failure", f"Failed: {status.error}"


def publish_result(ctx: context.BotContext, gh: GitHubAPI, request: JobRequest, op_id: str, result: dict,
                   max_open_prs: int, fork: bool = False) -> publish.Published:
    """Build the kernel's files and open or update its follow-up PR."""
    kernel_dir, files = kernel_files(ctx, request, op_id, result)
    rctx = report.report_context(request.repo, op_id, result, request.to_dict(), kernel_dir)
    files[f"{kernel_dir}/report.md"] = report.render("report.md.j2", **rctx).encode()
    origin = f"#{request.pr_number}" if request.pr_number is not None else "a scheduled sweep"
    note = ""
    if fork:
        note = f"The original PR comes from a fork, so this targets `{request.base_ref}`: merge {origin} first."
    body = report.render("pr_body.md.j2", origin=origin, note=note, **rctx)
    name = kernel_dir.rsplit("/", 1)[-1]
    return publish.publish(
        gh, request.repo, base_branch=request.base_ref, branch=publish.branch_name(name, request.base_ref),
        files=files, title=f"KernelEvo: faster kernel for {name}", body=body,
        message=f"kernelevo: verified kernel for {op_id}\n\nFrom {job_label(request)}.", max_open_prs=max_open_prs)


def job_label(request: JobRequest) -> str:
    """Where a job came from, for commit messages."""
    return (f"{request.repo}#{request.pr_number} at {request.head_sha[:12]}" if request.pr_number is not None
            else f"a sweep of {request.repo} at {request.head_sha[:12]}")


def kernel_files(ctx: context.BotContext, request: JobRequest, op_id: str,
                 result: dict) -> tuple[str, dict[str, bytes]]:
    """The ``kernels/<op-name>/`` files (kernel, manifest, generated test) written by the kernel store."""
    from kernelevo import kernel_store
    from kernelevo.discovery import discover

    best = result["best"]
    verdict = best.get("verdict") or {}
    with ctx.workspace(request.repo, request.head_sha) as workspace, \
            tempfile.TemporaryDirectory(prefix="kernelevo-publish-") as tmp:
        workspace, root = Path(workspace), Path(tmp)
        rel_path = op_id.partition("::")[0]
        ops = [op for op in discover(workspace, ["**/*.py"], [], files=[rel_path]).ops if op.op_id == op_id]
        if not ops:
            raise LookupError(f"op {op_id} is not in {request.repo} at {request.head_sha[:12]} any more")
        _copy_manifests(workspace / kernel_store.KERNELS_DIR, root / kernel_store.KERNELS_DIR)
        envelope = result.get("envelope") or best.get("envelope") or _envelope(verdict, result)
        directory = kernel_store.write_kernel(root, ops[0], best["source"], verdict, envelope)
        rel_dir = directory.relative_to(root).as_posix()
        files = {f"{rel_dir}/{p.name}": p.read_bytes() for p in sorted(directory.iterdir()) if p.is_file()}
    return rel_dir, files


def _copy_manifests(source: Path, dest: Path) -> None:
    """Copy only the existing kernels' manifests (regular files, no links): all the kernel store needs
    to pick a directory name, and nothing a PR could point elsewhere on this machine."""
    if not source.is_dir() or source.is_symlink():
        return
    for directory in source.iterdir():
        manifest = directory / "manifest.json"
        if directory.is_symlink() or manifest.is_symlink() or not manifest.is_file():
            continue
        (dest / directory.name).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(manifest, dest / directory.name / "manifest.json")


def _envelope(verdict: dict, result: dict) -> dict:
    """The dispatch envelope of the verified cases (the search's own helper); a closed one (dispatch
    refuses every call, which is safe) when the verdict does not describe its cases."""
    device = "cuda" if str(verdict.get("device", result.get("device", ""))).startswith("cuda") else "cpu"
    try:
        from kernelevo.search.targets import envelope_from_verdict

        return envelope_from_verdict(verdict, device)
    except (ImportError, ValueError, KeyError, TypeError):
        log.warning("no envelope derivable from the verdict; storing a closed envelope")
    env = verdict.get("environment") or {}
    return {"device_type": "cuda" if str(verdict.get("device", "")).startswith("cuda") else "cpu",
            "capabilities": None, "backend": verdict.get("backend", "unknown"),
            "versions": {k: env[k] for k in ("torch", "triton") if k in env}, "args": []}
