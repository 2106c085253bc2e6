"""Every Redis key the worker tier uses, in one place (so that tests, the store and docs agree)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass


@dataclass(frozen=True)
class Keys:
    """Key names under one prefix; ids and hashes are validated by the caller before they get here."""

    prefix: str = "kernelevo"

    def job(self, job_id: str) -> str:
        return f"{self.prefix}:job:{job_id}"

    @property
    def jobs(self) -> str:
        """Sorted set of every job id, scored by creation time (``jobs list``)."""
        return f"{self.prefix}:jobs"

    @property
    def active(self) -> str:
        """Set of the ids of jobs not yet in a terminal state (what the reaper looks at)."""
        return f"{self.prefix}:jobs:active"

    @property
    def finished(self) -> str:
        """Hash: terminal state -> how many jobs ended in it, ever (the bot's /metrics counters); incremented in
        the transaction that records the terminal state, so each job counts once."""
        return f"{self.prefix}:jobs:finished"

    def pull_request(self, repo: str, pr_number: int) -> str:
        """Set of the ids of a pull request's jobs (the bot's ``find``); named by a hash of (repo, PR)."""
        digest = hashlib.sha256(json.dumps([repo, pr_number]).encode()).hexdigest()[:32]
        return f"{self.prefix}:pr:{digest}"

    def idempotency(self, key: str) -> str:
        return f"{self.prefix}:idem:{key}"

    def lock(self, key: str) -> str:
        """The (repo, op) lock: holds the id of the job searching that op."""
        return f"{self.prefix}:lock:{key}"

    def heartbeat(self, job_id: str) -> str:
        """The running chunk's lease (expires unless renewed)."""
        return f"{self.prefix}:hb:{job_id}"

    def dispatching(self, job_id: str) -> str:
        """Short lease taken while a chunk message is being sent (the reaper waits for it)."""
        return f"{self.prefix}:dispatching:{job_id}"

    def blob(self, sha256: str) -> str:
        return f"{self.prefix}:blob:{sha256}"

    def run_files(self, job_id: str) -> str:
        """Hash: whole files of the job's run directory (run.json, summary.json, best/...)."""
        return f"{self.prefix}:run:{job_id}:files"

    def run_appends(self, job_id: str) -> str:
        """Set: names of the run directory's append-only files (proposals.jsonl, archive.jsonl)."""
        return f"{self.prefix}:run:{job_id}:appends"

    def run_lines(self, job_id: str, name: str) -> str:
        return f"{self.prefix}:run:{job_id}:lines:{name}"

    def run_bytes(self, job_id: str) -> str:
        return f"{self.prefix}:run:{job_id}:bytes"

    @property
    def reaper_tick(self) -> str:
        """Taken by the worker that runs the reaper this interval (the others skip)."""
        return f"{self.prefix}:reaper"
