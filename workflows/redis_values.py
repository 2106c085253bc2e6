"""Redis replies as the values their callers mean, typed at the one edge where they leave redis-py.

redis-py types a string reply as ``bytes | str`` (``str`` only for a client that decodes responses, which
:func:`workflows.redis_conn.connect` never makes), some replies as unions with shapes a command never has
for the arguments given (``zrevrange`` without scores), and ``transaction`` as running a callable that
returns nothing. These helpers check the shape once and give the rest of the code plain ``str``/``bytes``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import redis
from redis.client import Pipeline

T = TypeVar("T")


def text(reply: object) -> str:
    """A string reply (a key, a set member, a field, a value) as text."""
    if isinstance(reply, bytes):
        return reply.decode()
    if isinstance(reply, str):
        return reply
    raise TypeError(f"expected a string reply from Redis, got a {type(reply).__name__}")


def blob(reply: object) -> bytes:
    """A binary reply (a tarball) as bytes; a decoded one would already have lost its bytes."""
    if isinstance(reply, bytes):
        return reply
    raise TypeError(f"expected a bytes reply from Redis, got a {type(reply).__name__}: connect with"
                    " workflows.redis_conn.connect (a client with decode_responses=True cannot read binary values)")


def transaction(client: redis.Redis, body: Callable[[Pipeline], T], *watch: str) -> T:
    """Run ``body`` in redis-py's WATCH/MULTI/EXEC loop (started over on a concurrent write) and return the
    value of its run whose EXEC went through."""
    results: list[T] = []

    def run(pipe: Pipeline) -> None:
        results[:] = [body(pipe)]

    client.transaction(run, *watch)
    return results[0]
