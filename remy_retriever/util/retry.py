"""How calls to a Chroma server are bounded and retried: :class:`RetryPolicy`.

Every Chroma call goes through ``stores.chroma.ChromaCalls.call``. A call that fails
because the server cannot be reached (connection refused or reset, the server vanished
mid-request, a request timed out) is retried with exponential backoff; any other failure
is raised at once. Every
operation remy-retriever sends is safe to repeat (reads, ``upsert`` and ``delete`` by id,
setting the collection's generation token to a value chosen before the first attempt), so
a retry never duplicates or loses a write.

``timeout`` bounds each HTTP request of a ``chromadb.HttpClient`` (Chroma itself sets no
timeout, so a hung server would block forever). It is applied to the client's HTTP
session, which chromadb shares between all clients of the same host, port and settings in
one process. Embedded stores (``PersistentClient``) ignore it.

A call against an unreachable or hung server therefore gives up after about
:meth:`RetryPolicy.max_duration` seconds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import InvalidInputError

__all__ = ["DEFAULT_RETRY", "RetryPolicy"]


@dataclass(frozen=True)
class RetryPolicy:
    """Retries of Chroma calls that fail to reach the server, and the request timeout.

    ``attempts``: tries per call in total (1 = no retry). ``backoff``: seconds before the
    second try, doubling after each failure up to ``max_backoff``. ``timeout``: seconds
    an HTTP request may wait on the network (to connect, to send, for each read from the
    server) before it counts as failed; ``None`` waits forever (chromadb's default).

    Usage:
        >>> r = Retriever(client=chromadb.HttpClient(port=8000), lexical_path="./lex",
        ...               retry=RetryPolicy(attempts=5, backoff=0.5, timeout=10))
    """

    attempts: int = 3
    backoff: float = 0.2
    max_backoff: float = 2.0
    timeout: float | None = 60.0

    def __post_init__(self) -> None:
        if isinstance(self.attempts, bool) or not isinstance(self.attempts, int):
            msg = f"RetryPolicy.attempts must be an int >= 1, got {self.attempts!r}"
            raise InvalidInputError(msg)
        if self.attempts < 1:
            msg = f"RetryPolicy.attempts must be >= 1 (1 = no retry), got {self.attempts}"
            raise InvalidInputError(msg)
        for name in ("backoff", "max_backoff"):
            value = getattr(self, name)
            if not _is_seconds(value):
                msg = f"RetryPolicy.{name} must be a finite number of seconds >= 0, got {value!r}"
                raise InvalidInputError(msg)
        if self.timeout is not None and (not _is_seconds(self.timeout) or self.timeout <= 0):
            msg = (
                f"RetryPolicy.timeout must be a finite number of seconds > 0, or None for "
                f"no timeout; got {self.timeout!r}"
            )
            raise InvalidInputError(msg)

    def delay(self, failures: int) -> float:
        """Seconds to wait after the ``failures``-th failed attempt (1-based)."""
        return float(min(self.max_backoff, self.backoff * 2 ** max(0, failures - 1)))

    def max_duration(self) -> float | None:
        """How long a call against an unreachable or hung server takes to give up:
        ``attempts`` timeouts plus the backoff sleeps (``None`` without a timeout)."""
        if self.timeout is None:
            return None
        sleeps = sum(self.delay(i) for i in range(1, self.attempts))
        return self.attempts * self.timeout + sleeps


def _is_seconds(value: object) -> bool:
    return (
        not isinstance(value, bool)
        and isinstance(value, (int, float))
        and math.isfinite(value)
        and value >= 0
    )


#: What a Retriever uses when given no policy: three tries, 60 s per request.
DEFAULT_RETRY = RetryPolicy()
