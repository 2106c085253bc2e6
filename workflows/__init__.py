"""The worker tier: search jobs as resumable chunks on Celery workers, with durable job records in Redis.

What the bot and the CLI use: :class:`workflows.client.JobsClient` (submit, get, list, cancel) over a
:class:`workflows.store.JobStore`, with the typed contract in :mod:`workflows.models`. Search internals
stay behind :mod:`workflows.chunk`, which only the GPU workers run. See docs/workers.md.
"""
