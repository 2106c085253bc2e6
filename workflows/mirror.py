"""A job's run directory, mirrored into Redis as it is written, and restored from there by the next chunk.

Each append-only file (``proposals.jsonl``, ``archive.jsonl``) is a Redis list, each whole file
(``run.json``, ``summary.json``, ``best/...``) a field of one hash. Every write is one Lua script that
first checks the job record: the writer must still own the job's current epoch (node, pid, epoch), so a
worker that lost its claim cannot touch the run any more. An append names the line's index, so that an
append retried after a dropped connection is not written twice. The copy's size is capped.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import TYPE_CHECKING

import redis

from kernelevo.search.rundir import restore_run_dir
from workflows.keys import Keys
from workflows.models import WorkerIdentity
from workflows.redis_conn import retrying
from workflows.redis_values import text

if TYPE_CHECKING:
    from redis.commands.core import Script
from workflows.store import Fenced

log = logging.getLogger(__name__)

# KEYS[1] job record. ARGV[1] epoch, ARGV[2] node, ARGV[3] pid. Sets `err` when the writer is not the owner.
_FENCE = """
local raw = redis.call('GET', KEYS[1])
if not raw then return redis.error_reply('FENCED the job no longer exists') end
local rec = cjson.decode(raw)
if rec['state'] ~= 'running' or tonumber(rec['epoch']) ~= tonumber(ARGV[1])
   or tostring(rec['owner']) ~= ARGV[2] or tostring(rec['owner_pid']) ~= ARGV[3] then
  return redis.error_reply('FENCED epoch ' .. ARGV[1] .. ' is no longer owned by ' .. ARGV[2] .. ' pid ' .. ARGV[3])
end
"""

# KEYS[2] line list, KEYS[3] byte counter, KEYS[4] set of names. ARGV[4] name, ARGV[5] index, ARGV[6] line, ARGV[7] cap
_APPEND = _FENCE + """
local n = redis.call('LLEN', KEYS[2])
local i = tonumber(ARGV[5])
if n > i then
  if redis.call('LINDEX', KEYS[2], i) == ARGV[6] then return n end
  return redis.error_reply('DIVERGED line ' .. i .. ' of ' .. ARGV[4] .. ' differs from the copy in Redis')
end
if n < i then return redis.error_reply('DIVERGED ' .. ARGV[4] .. ' has ' .. n .. ' lines, not ' .. i) end
local size = redis.call('INCRBY', KEYS[3], string.len(ARGV[6]))
if size > tonumber(ARGV[7]) then
  redis.call('DECRBY', KEYS[3], string.len(ARGV[6]))
  return redis.error_reply('TOO_LARGE')
end
redis.call('RPUSH', KEYS[2], ARGV[6])
redis.call('SADD', KEYS[4], ARGV[4])
return n + 1
"""

# KEYS[2] file hash, KEYS[3] byte counter. ARGV[4] name, ARGV[5] text, ARGV[6] cap
_REPLACE = _FENCE + """
local old = redis.call('HSTRLEN', KEYS[2], ARGV[4])
local delta = string.len(ARGV[5]) - old
local size = redis.call('INCRBY', KEYS[3], delta)
if size > tonumber(ARGV[6]) then
  redis.call('DECRBY', KEYS[3], delta)
  return redis.error_reply('TOO_LARGE')
end
redis.call('HSET', KEYS[2], ARGV[4], ARGV[5])
return size
"""


class RunTooLarge(RuntimeError):
    """The job's run copy in Redis would pass its size cap."""


def snapshot(client: redis.Redis, keys: Keys, job_id: str) -> tuple[dict[str, str], dict[str, int]]:
    """The job's mirrored run: file name -> full text, and the line count of each append-only file."""
    files = {text(k): text(v) for k, v in client.hgetall(keys.run_files(job_id)).items()}
    counts: dict[str, int] = {}
    for name in sorted(text(raw_name) for raw_name in client.smembers(keys.run_appends(job_id))):
        lines = [text(line) for line in client.lrange(keys.run_lines(job_id, name), 0, -1)]
        files[name] = "".join(lines)
        counts[name] = len(lines)
    return files, counts


class RedisRunMirror:
    """The :class:`kernelevo.search.rundir.RunMirror` of one chunk: writes as ``worker`` at ``epoch``."""

    def __init__(self, client: redis.Redis, keys: Keys, job_id: str, epoch: int, worker: WorkerIdentity, *,
                 max_bytes: int, counts: dict[str, int] | None = None, redis_retry_s: float = 120.0) -> None:
        self.client, self.keys, self.job_id, self.epoch, self.worker = client, keys, job_id, epoch, worker
        self.max_bytes = max_bytes
        self.counts = dict(counts or {})
        self._append = client.register_script(_APPEND)
        self._replace = client.register_script(_REPLACE)
        self._retry = retrying(redis_retry_s)
        self._closed = threading.Event()

    @classmethod
    def restore(cls, client: redis.Redis, keys: Keys, job_id: str, epoch: int, worker: WorkerIdentity,
                run_dir: Path, *, max_bytes: int, redis_retry_s: float = 120.0) -> RedisRunMirror:
        """Rebuild ``run_dir`` (a fresh directory) from the job's copy and return the mirror continuing it."""
        files, counts = retrying(redis_retry_s)(lambda: snapshot(client, keys, job_id))
        restore_run_dir(run_dir, files)
        return cls(client, keys, job_id, epoch, worker, max_bytes=max_bytes, counts=counts,
                   redis_retry_s=redis_retry_s)

    def close(self) -> None:
        """Stop mirroring (the chunk is over; proposer replies still arriving are not this chunk's to keep)."""
        self._closed.set()

    def _fence_args(self) -> list[str]:
        return [str(self.epoch), self.worker.node, str(self.worker.pid)]

    def _run(self, script: Script, keys: list[str], args: list[str | int | float]) -> None:
        try:
            self._retry(lambda: script(keys=keys, args=args))
        except redis.ResponseError as exc:
            message = str(exc)
            if message.startswith("FENCED"):
                raise Fenced(f"{self.job_id}: {message.removeprefix('FENCED ')}") from None
            if message.startswith("TOO_LARGE"):
                raise RunTooLarge(
                    f"the run of {self.job_id} has grown past {self.max_bytes / 2**20:.0f} MiB in Redis"
                    " (KERNELEVO_QUEUE_RUN_MAX_BYTES): submit it again with a smaller candidate budget, or raise"
                    " the cap") from None
            raise

    def appended(self, name: str, line: str) -> None:
        if self._closed.is_set():
            log.debug("%s: %s line not mirrored (the chunk has ended)", self.job_id, name)
            return
        index = self.counts.get(name, 0)
        self._run(self._append, [self.keys.job(self.job_id), self.keys.run_lines(self.job_id, name),
                                 self.keys.run_bytes(self.job_id), self.keys.run_appends(self.job_id)],
                  [*self._fence_args(), name, index, line, self.max_bytes])
        self.counts[name] = index + 1

    def replaced(self, name: str, text: str) -> None:
        if self._closed.is_set():
            log.debug("%s: %s not mirrored (the chunk has ended)", self.job_id, name)
            return
        self._run(self._replace, [self.keys.job(self.job_id), self.keys.run_files(self.job_id),
                                  self.keys.run_bytes(self.job_id)],
                  [*self._fence_args(), name, text, self.max_bytes])
