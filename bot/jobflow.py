"""The bot's side of a finished or running job: publish its result, report it on its check run and PR.

The worker tier tells the bot about a job by name on the ``bot`` queue (``BOT_PUBLISH_TASK``,
``BOT_PROGRESS_TASK``); the bot reads the typed :class:`~workflows.models.JobRecord` and does all the
GitHub I/O here. Publishing is idempotent: a job is reported under its lock, its op's outcome is stored
on the request's :class:`~bot.state.RunLink` before the record is marked ``published``, and a redelivered
or repeated publish of a ``published`` job only refreshes the check run and the status comment.

The follow-up's report (``report.md``, PNG plots, the PR body) comes from :func:`bot.report.follow_up`, fed
the job's ``archive.jsonl`` from its run as the job store keeps it; the same report, rendered for a check-run
summary, is kept per op in Redis until the request's check run is completed with it under the per-op lines.

Nothing here imports or runs repository code: the op is found again by static discovery, and the
kernel store only writes text files (kernel source, manifest JSON, a generated test).
"""

from __future__ import annotations

import enum
import logging
import shutil
import tempfile
import time
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot import checks, context, publish, report
from bot.github_api import GitHubAPI, GitHubError
from bot.report import code, escape_md
from bot.state import Conclusion, OpLine, RunLink
from kernelevo.kernel_store import KernelStoreError
from workflows.models import JobRecord, JobState, OriginKind

log = logging.getLogger(__name__)

PUBLISH_LOCK_S = 180.0  # the longest a publish may hold a job (a dead publisher's lock lapses after it)


def iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


class Reported(str, enum.Enum):
    """What :func:`publish_job` did."""

    PUBLISHED = "published"  # the outcome was reported now
    ALREADY = "already"  # the job was reported before (a redelivery): nothing done twice
    BUSY = "busy"  # another bot process is reporting it right now
    NOT_FINISHED = "not_finished"
    MISSING = "missing"


@dataclass(frozen=True)
class Outcome:
    """One op's outcome: the line shown on the PR, its conclusion, the follow-up PR if one was opened, and then
    the op's report for the request's check run (``kernelevo.report``'s Markdown for a check-run summary)."""

    text: str
    conclusion: Conclusion
    follow_up_pr: int | None = None
    check_report: str | None = None


def search_result(record: JobRecord) -> dict[str, Any] | None:
    """The search's result as the report templates read it (``SearchResult.to_dict()``'s shape)."""
    if record.result is None:
        return None
    res = record.result
    best = ({"id": res.best_id, "source": res.best_source, "verdict": res.verdict, "fitness": res.best_fitness}
            if res.best_source else None)
    return {**res.summary, "stop_reason": res.stop_reason, "best": best}


def installation_of(record: JobRecord) -> int:
    """The GitHub App installation a job reports to (every job the bot submits, PR or sweep, names one)."""
    installation_id = record.spec.origin.installation_id
    if installation_id is None:
        raise ValueError(f"{record.id} is a {record.spec.origin.kind.value} job without a GitHub installation: only"
                         " jobs the bot submitted are reported on GitHub")
    return installation_id


def needs_publishing(record: JobRecord) -> bool:
    """Whether a terminal job's result is worth a follow-up PR (``report.assess`` decides)."""
    return record.state is JobState.SUCCEEDED and report.assess(search_result(record)).publish


def unpublished_outcome(record: JobRecord) -> Outcome:
    """The outcome of a terminal job that gets no follow-up PR (pure)."""
    if record.state in (JobState.SUCCEEDED, JobState.NO_IMPROVEMENT):
        return Outcome(f"no PR: {escape_md(report.assess(search_result(record)).reason)}", Conclusion.NEUTRAL)
    if record.state is JobState.CANCELLED:
        return Outcome(f"cancelled: {escape_md(record.error or 'by request')}", Conclusion.CANCELLED)
    return Outcome(f"failed: {escape_md(record.error or 'unknown error')}", Conclusion.FAILURE)


def published_outcome(result: publish.Published, reason: str, max_open_prs: int,
                      check_report: str | None = None) -> Outcome:
    """The outcome of a publish attempt (pure); ``check_report``: the op's report, kept only when a PR was opened
    or updated (the check run shows the reports of published ops)."""
    if result.number is None:
        return Outcome(f"not published: the repo already has {max_open_prs} open kernel PRs (max_open_prs);"
                       " merge or close some", Conclusion.NEUTRAL)
    return Outcome(f"#{result.number} ({result.action}): {escape_md(reason)}", Conclusion.SUCCESS, result.number,
                   check_report)


def missing_outcome(job_id: str) -> Outcome:
    return Outcome(f"failed: job {job_id} no longer exists (its record expired or Redis lost it); comment"
                   " `/kernelevo optimize` to run it again", Conclusion.FAILURE)


# -- publishing -------------------------------------------------------------------------------------


def publish_job(ctx: context.BotContext, job_id: str) -> Reported:
    """Report a terminal job on GitHub once: follow-up PR, its check-run line, the status comment."""
    record = ctx.jobs.get(job_id)
    if record is None:
        return Reported.MISSING
    if not record.state.terminal:
        return Reported.NOT_FINISHED
    with ctx.state.lock(f"job:{job_id}", timeout_s=PUBLISH_LOCK_S, wait_s=0) as got:
        if not got:
            return Reported.BUSY
        record = ctx.jobs.get(job_id)
        if record is None:
            return Reported.MISSING
        run_id = run_of(ctx, record)
        outcome = None
        if record.published:
            reported = Reported.ALREADY
        else:
            run = ctx.state.run(run_id) if run_id is not None else None
            line = run.line(record.spec.op_id) if run else None
            if line is not None and line.outcome is not None:  # reported before a crash, not yet marked
                outcome = Outcome(line.outcome, line.conclusion or Conclusion.NEUTRAL, line.follow_up_pr)
            else:
                outcome = report_outcome(ctx, record)
                if run_id is None and record.spec.origin.kind is OriginKind.PR:
                    run_id = orphan_run(ctx, record)
                if run_id is not None:
                    if outcome.check_report is not None:  # before the outcome: a line never lacks its report
                        ctx.state.save_check_report(run_id, record.spec.op_id, outcome.check_report)
                    set_outcome(ctx, run_id, record.spec.op_id, job_id, outcome)

            def mark(r: JobRecord) -> JobRecord:
                links = r.links.model_copy(update={"check_run_id": run_id or r.links.check_run_id,
                                                   "follow_up_pr": outcome.follow_up_pr or r.links.follow_up_pr})
                return r.model_copy(update={"published": True, "links": links})

            ctx.jobs.update(job_id, mark)
            reported = Reported.PUBLISHED
        ctx.state.discard_open_job(job_id)
    if run_id is not None:
        refresh_run(ctx, run_id)
    origin = record.spec.origin
    if origin.kind is OriginKind.PR and origin.pr_number is not None:
        gh = ctx.github(installation_of(record))
        ctx.state.add_pull_jobs(record.spec.repo, origin.pr_number, [job_id])
        notice = None if outcome is None else f"{code(record.spec.op_id)}: {outcome.text}"
        context.refresh_status(ctx, gh, record.spec.repo, origin.pr_number, notice)
    return reported


def run_of(ctx: context.BotContext, record: JobRecord) -> int | None:
    """The check run reporting ``record``: from its links, else the one bound to its spec before it was
    submitted (a job that finished before the bot linked it)."""
    return record.links.check_run_id or ctx.state.run_for(record.spec.idempotency_key())


def orphan_run(ctx: context.BotContext, record: JobRecord) -> int:
    """A check run for a PR job that has none (the bot stopped between submitting it and linking it)."""
    from bot.state import RunLink

    installation_id = installation_of(record)
    gh = ctx.github(installation_id)
    run_id = checks.start_run(gh, record.spec.repo, record.spec.commit_sha, [record.spec.op_id])
    ctx.state.put_run(RunLink(check_run_id=run_id, repo=record.spec.repo, installation_id=installation_id,
                              pr_number=record.spec.origin.pr_number, head_sha=record.spec.commit_sha,
                              ops=[OpLine(op_id=record.spec.op_id, job_id=record.id)], submitted=True))
    return run_id


def set_outcome(ctx: context.BotContext, run_id: int, op_id: str, job_id: str | None, outcome: Outcome) -> None:
    def change(run: RunLink) -> RunLink:
        line = run.line(op_id)
        if line is None:
            line = OpLine(op_id=op_id)
            run.ops.append(line)
        line.job_id = job_id or line.job_id
        line.outcome, line.conclusion, line.follow_up_pr = outcome.text, outcome.conclusion, outcome.follow_up_pr
        return run

    ctx.state.update_run(run_id, change)


def report_outcome(ctx: context.BotContext, record: JobRecord) -> Outcome:
    """Publish the job's follow-up PR when its result is worth one; the op's outcome either way."""
    result = search_result(record)
    if result is None or not needs_publishing(record):
        return unpublished_outcome(record)
    spec = record.spec
    gh = ctx.github(installation_of(record))
    assessment = report.assess(result)
    try:
        origin = spec.origin
        if origin.kind is OriginKind.PR and origin.pr_number is not None:
            if gh.get_pull(spec.repo, origin.pr_number).get("state") != "open":
                return Outcome("no PR: the pull request was closed before the result came", Conclusion.NEUTRAL)
        default_branch = gh.get_repo(spec.repo).get("default_branch", "main")
        config, _ = context.load_config(gh, spec.repo, default_branch)
        run_id = run_of(ctx, record)
        run = ctx.state.run(run_id) if run_id else None
        published, made = publish_result(ctx, gh, record, result, config.max_open_prs,
                                         fork=bool(run and run.fork))
    except KernelStoreError as exc:  # the folder is taken on the base (another op, no manifest): retrying cannot help
        return Outcome(f"not published, nothing was pushed: {escape_md(exc)}", Conclusion.FAILURE)
    except (GitHubError, LookupError, OSError, ValueError) as exc:
        log.exception("publishing %s failed", record.id)
        return Outcome(f"publishing failed, nothing was pushed ({escape_md(exc)}); comment `/kernelevo optimize`"
                       " to retry", Conclusion.FAILURE)
    return published_outcome(published, assessment.reason, config.max_open_prs, made.check_report)


def publish_result(ctx: context.BotContext, gh: GitHubAPI, record: JobRecord, result: dict[str, Any], max_open_prs: int,
                   fork: bool = False) -> tuple[publish.Published, report.FollowUp]:
    """Build the kernel's files and its report (``report.md``, the PNG plots, the PR body, from the job's full
    archive where its run is still in the job store) and open or update its follow-up PR."""
    spec, origin = record.spec, record.spec.origin
    base = origin.base_ref or "main"
    parent = gh.branch_sha(spec.repo, base)
    if parent is None:
        raise LookupError(f"{spec.repo}: base branch {base!r} does not exist (deleted or renamed?)")
    kernel_dir, files = kernel_files(ctx, record, result, base=base, base_sha=parent)
    request = {"head_sha": spec.commit_sha, "backend": spec.backend, "budget_tokens": spec.budgets.tokens,
               "device": spec.device}
    label = f"#{origin.pr_number}" if origin.pr_number is not None else "a scheduled sweep"
    note = f"The original PR comes from a fork, so this targets {code(base)}: merge {label} first." if fork else ""
    name = kernel_dir.rsplit("/", 1)[-1]
    branch = publish.branch_name(name, base)
    made = report.follow_up(spec.repo, spec.op_id, result, request, kernel_dir, branch=branch, origin=label,
                            note=note, archive=job_archive(ctx, record.id))
    files.update(made.files)  # report.md and plots/*.png: bytes, committed as base64 blobs
    published = publish.publish(
        gh, spec.repo, base_branch=base, branch=branch, files=files,
        title=f"KernelEvo: faster kernel for {name}", body=made.body,
        message=f"kernelevo: verified kernel for {spec.op_id}\n\nFrom {job_label(record)}.",
        max_open_prs=max_open_prs, parent=parent)
    return published, made


def job_archive(ctx: context.BotContext, job_id: str) -> list[dict[str, Any]] | None:
    """The job's ``archive.jsonl`` records, from its run as the job store keeps it (restored into a temporary
    directory and removed again); None when the store no longer holds the run (it expired, or a worker never
    mirrored one) or it cannot be read: the report then says it has no per-candidate records."""
    from kernelevo.search.rundir import RunDir

    with tempfile.TemporaryDirectory(prefix="kernelevo-archive-") as tmp:
        try:
            return RunDir(ctx.jobs.restore_run(job_id, Path(tmp) / "run")).candidates()
        except FileNotFoundError:
            log.info("%s: no run in the job store; its report has no per-candidate records", job_id)
        except (OSError, ValueError) as exc:  # a damaged copy: report without it rather than not at all
            log.warning("%s: its run in the job store cannot be read (%s); reporting without its archive", job_id,
                        exc)
    return None


def job_label(record: JobRecord) -> str:
    """Where a job came from, for commit messages."""
    spec, origin = record.spec, record.spec.origin
    return (f"{spec.repo}#{origin.pr_number} at {spec.commit_sha[:12]}" if origin.pr_number is not None
            else f"a sweep of {spec.repo} at {spec.commit_sha[:12]}")


def kernel_files(ctx: context.BotContext, record: JobRecord, result: dict[str, Any], *, base: str,
                 base_sha: str) -> tuple[str, dict[str, bytes]]:
    """The ``kernels/<op-name>/`` files (kernel, manifest, generated test) written by the kernel store.

    The op is found by static discovery of its file at the job's commit; the folder is picked from the
    manifests of ``base_sha``, the commit of ``base`` the follow-up is committed onto (a PR's head cannot
    delete another op's manifest to take its folder), and a folder holding another op's kernel there is
    refused. Only those manifests are copied from the checkout, and the kernel store writes text. No
    repository code runs."""
    from kernelevo import kernel_store
    from kernelevo.discovery import discover

    spec = record.spec
    best = result["best"]
    verdict = best.get("verdict") or {}
    installation = installation_of(record)
    with ExitStack() as stack:
        workspace = Path(stack.enter_context(ctx.workspace(installation, spec.repo, spec.commit_sha)))
        onto = workspace if base_sha == spec.commit_sha else Path(
            stack.enter_context(ctx.workspace(installation, spec.repo, base_sha)))
        root = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="kernelevo-publish-")))
        rel_path = spec.op_id.partition("::")[0]
        ops = [op for op in discover(workspace, ["**/*.py"], [], files=[rel_path]).ops if op.op_id == spec.op_id]
        if not ops:
            raise LookupError(f"op {spec.op_id} is not in {spec.repo} at {spec.commit_sha[:12]} any more")
        _copy_manifests(onto / kernel_store.KERNELS_DIR, root / kernel_store.KERNELS_DIR)
        _refuse_another_ops_folder(root, spec.op_id, base)
        envelope = result.get("envelope") or best.get("envelope") or _envelope(verdict, spec.device)
        directory = kernel_store.write_kernel(root, ops[0], best["source"], verdict, envelope)
        rel_dir = directory.relative_to(root).as_posix()
        files = {f"{rel_dir}/{p.name}": p.read_bytes() for p in sorted(directory.iterdir()) if p.is_file()}
    return rel_dir, files


def _refuse_another_ops_folder(root: Path, op_id: str, base: str) -> None:
    """Raise :class:`kernelevo.kernel_store.KernelStoreError` when the folder the kernel store would write
    ``op_id`` into already exists on the base (mirrored under ``root`` by :func:`_copy_manifests`) and does not
    hold ``op_id``'s own manifest: another op's, an unreadable one, or none (a maintainer's own files)."""
    from kernelevo import kernel_store

    # raises when both of the op's names are taken, or the one it picks is a folder without a manifest
    directory = kernel_store.kernel_dir_for(root, op_id, on=base)
    manifest = directory / kernel_store.MANIFEST
    if not manifest.exists():
        return
    owner = kernel_store.manifest_op_id(manifest)
    if owner != op_id:
        rel = directory.relative_to(root).as_posix()
        raise kernel_store.KernelStoreError(
            f"{rel}/ on {base} holds {'the kernel of ' + str(owner) if owner else 'an unreadable manifest'}, not"
            f" {op_id}'s: nothing is written over it (rename the op, or move or fix that folder on {base})")


def _copy_manifests(source: Path, dest: Path) -> None:
    """Mirror the base's ``kernels/`` names under ``dest``: each folder's manifest (a regular file, no links)
    copied, every other entry (a folder without a manifest, a file, a link) an empty folder, so the kernel store
    sees each name as taken. All the kernel store needs to pick a directory name, and nothing a PR could point
    elsewhere on this machine."""
    if not source.is_dir() or source.is_symlink():
        return
    for directory in source.iterdir():
        manifest = directory / "manifest.json"
        (dest / directory.name).mkdir(parents=True, exist_ok=True)
        if directory.is_symlink() or manifest.is_symlink() or not manifest.is_file():
            continue
        shutil.copyfile(manifest, dest / directory.name / "manifest.json")


def _envelope(verdict: dict[str, Any], device: str) -> dict[str, Any]:
    """The dispatch envelope of the verified cases (the search's own helper); a closed one (dispatch
    refuses every call, which is safe) when the verdict does not describe its cases."""
    kind = "cuda" if str(verdict.get("device", device)).startswith("cuda") else "cpu"
    try:
        from kernelevo.search.targets import envelope_from_verdict

        return envelope_from_verdict(verdict, kind)
    except (ImportError, ValueError, KeyError, TypeError):
        log.warning("no envelope derivable from the verdict; storing a closed envelope")
    env = verdict.get("environment") or {}
    return {"device_type": kind, "capabilities": None, "backend": verdict.get("backend", "unknown"),
            "versions": {k: env[k] for k in ("torch", "triton") if k in env}, "args": []}


# -- the check run of a request ---------------------------------------------------------------------


def refresh_run(ctx: context.BotContext, run_id: int, *, progress: bool = False) -> RunLink | None:
    """Bring a request's check run up to date: completed once every op is reported, else its lines.

    ``progress``: an update asked by a running job (throttled to one per ``progress_interval_s``, except
    the first, which moves the run to in_progress). Writes of one run never interleave (a Redis lock),
    and nothing is written after the run was completed."""
    # The lock lapses 30 s after a dead holder took it and is waited for 60 s: a crash never blocks a run.
    with ctx.state.lock(f"run:{run_id}", timeout_s=30, wait_s=60):
        run = ctx.state.run(run_id)
        if run is None or run.completed:
            if run is not None:
                ctx.state.close_run(run_id)
            return run
        gh = ctx.github(run.installation_id)
        records = {line.job_id: ctx.jobs.get(line.job_id) for line in run.ops if line.job_id}
        summary = checks.run_summary(run, records, ctx.state.check_reports(run_id))
        if run.submitted and run.done:
            conclusion, title = checks.run_conclusion(run)
            checks.finish_run(gh, run.repo, run_id, conclusion=conclusion, title=title, summary=summary,
                              completed_at=iso(ctx.clock()))
            done = ctx.state.update_run(run_id, lambda r: r.model_copy(update={"completed": True}))
            ctx.state.drop_check_reports(run_id)  # only after: a run completed again after a crash still has them
            return done
        running = any(r is not None and r.state is not JobState.QUEUED for r in records.values())
        if not running and not any(line.outcome for line in run.ops):
            return run  # still queued: the run says so already
        throttled = progress and not ctx.state.throttle(f"run:{run_id}", ctx.progress_interval_s)
        if throttled and run.started:  # the first update always goes: it moves the run to in_progress
            return run
        checks.update_progress(gh, run.repo, run_id, summary)
        if not run.started:
            run = ctx.state.update_run(run_id, lambda r: r.model_copy(update={"started": True}))
        return run


def report_progress(ctx: context.BotContext, job_id: str) -> None:
    """A job started or continued a chunk: show its progress on its request's check run (throttled)."""
    record = ctx.jobs.get(job_id)
    if record is None:
        return
    run_id = run_of(ctx, record)
    if run_id is not None:
        refresh_run(ctx, run_id, progress=True)
    origin = record.spec.origin
    if (origin.kind is OriginKind.PR and origin.pr_number is not None
            and ctx.state.throttle(f"status:{record.spec.repo}#{origin.pr_number}", ctx.progress_interval_s)):
        # the status table shows the job's state: "running" once it started, not the "queued" of its request
        context.refresh_status(ctx, ctx.github(installation_of(record)), record.spec.repo, origin.pr_number, None)
