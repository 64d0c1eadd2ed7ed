"""Running points: in this process (serial) or on a Dask distributed cluster.

Both backends call the same ``evaluate(point) -> record`` function (for ``crane-dse``,
``crane.tools.dse_point.evaluate``: the ``segment`` pass on the point) and hand every
record to ``sink`` as soon as it exists, in completion order. ``evaluate`` must be a
module-level function, so that Dask can send it to worker processes by reference, and it
should not raise: a point that cannot be scheduled is a record with status ``error``.
What can still go wrong on a cluster (a worker process dies, the scheduler goes away) is
returned as :class:`Lost` points, which are not recorded and so run again on resume.

Dask is imported only when the Dask backend is used.
"""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from crane.dse.points import Point

if TYPE_CHECKING:
    from distributed import Client

Evaluate = Callable[[Point], dict[str, Any]]
Sink = Callable[[dict[str, Any]], None]


@dataclass(frozen=True, slots=True)
class Lost:
    """A point whose evaluation did not come back, and why."""

    point: Point
    reason: str


def run_serial(points: Sequence[Point], evaluate: Evaluate, sink: Sink) -> list[Lost]:
    """Evaluate the points one after another in this process."""
    for point in points:
        sink(evaluate(point))
    return []


def run_dask(points: Sequence[Point], evaluate: Evaluate, sink: Sink,
             client: Client) -> list[Lost]:
    """Evaluate the points as tasks on ``client``'s cluster, recording them as they finish.

    On an exception in this process (KeyboardInterrupt included) the tasks still queued are
    cancelled before it propagates.
    """
    from distributed import as_completed

    run = uuid.uuid4().hex[:8]
    # Task keys are unique per run: a cluster shared between runs never hands back a stale
    # or cancelled task of an earlier (perhaps killed) client.
    futures = {client.submit(evaluate, point, key=f"crane-dse-{point.key}-{run}",
                             pure=False, retries=0): point for point in points}
    lost: list[Lost] = []
    try:
        for future in as_completed(futures):
            point = futures.pop(future)
            if future.status == "finished":
                sink(future.result())
            else:
                lost.append(Lost(point, _reason(future)))
            future.release()
    finally:
        if futures:
            client.cancel(list(futures))
    return lost


def _reason(future: Any) -> str:
    try:
        problem = future.exception(timeout=5)
    except Exception as exc:  # cancelled futures raise instead of returning it
        problem = exc
    return f"{type(problem).__name__}: {problem}" if problem is not None else future.status


@contextmanager
def dask_client(address: str | None = None, workers: int | None = None) -> Iterator[Client]:
    """A client of the cluster at ``address``, or of a new local cluster (closed after).

    The local cluster runs ``workers`` processes (default: the CPU count) of one thread
    each: the scheduler is pure Python, so threads would only contend for the GIL.
    Raises OSError (or TimeoutError) when the address cannot be reached.
    """
    from distributed import Client, LocalCluster

    logging.getLogger("distributed").setLevel(logging.ERROR)
    if address is not None:
        client = Client(address, timeout="10s")
        try:
            yield client
        finally:
            client.close()
        return
    cluster = LocalCluster(n_workers=workers or os.cpu_count() or 1, threads_per_worker=1,
                           processes=True, dashboard_address=None, silence_logs=logging.ERROR)
    try:
        with Client(cluster) as client:
            yield client
    finally:
        cluster.close()
