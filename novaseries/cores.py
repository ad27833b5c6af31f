"""The cores shared out between ``ci``'s jobs: ``ci``
(:func:`novaseries.ci.run_jobs`) alone counts the jobs running
(:func:`job_started`, :func:`job_ended`); a test run asks for its stestr
workers (:func:`mode_concurrency`, :func:`functional_concurrency`).
"""

import os
import threading


#: ``ci`` jobs running now (:func:`job_started`, :func:`job_ended`).
_JOBS = {"running": 0}
_JOBS_LOCK = threading.Lock()


def job_started():
    """A ``ci`` job (:func:`novaseries.ci.run_jobs`) starts: the stestr
    runs that start from now on share the cores with it."""
    with _JOBS_LOCK:
        _JOBS["running"] += 1


def job_ended():
    """A ``ci`` job has ended (see :func:`job_started`)."""
    with _JOBS_LOCK:
        _JOBS["running"] = max(0, _JOBS["running"] - 1)


def mode_concurrency(count):
    """stestr workers of each of ``count`` modes that run at once: the
    cores shared out between them and the other ``ci`` jobs running now
    (at least 1); None (stestr's default, one per core) for a single mode
    with nothing else running."""
    with _JOBS_LOCK:
        jobs = max(1, _JOBS["running"])
    if count < 2 and jobs < 2:
        return None
    return max(1, (os.cpu_count() or 1) // (count * jobs))


def functional_concurrency(mode, concurrency):
    """stestr workers for a functional run in ``mode`` (None: no mode)
    given the workers ``concurrency`` of its other suites (None: stestr's
    default, one per core): ``functional_workers_per_core`` times as many,
    for a mode whose functional tests mostly wait; else ``concurrency``."""
    per_core = mode.functional_workers_per_core if mode is not None else 1
    if per_core == 1:
        return concurrency
    return per_core * (concurrency or os.cpu_count() or 1)
