"""The cores shared out between ``ci``'s tasks: ``ci``
(:func:`novaseries.ci.run_tasks`) alone counts the tasks running
(:func:`task_started`, :func:`task_ended`); a test run asks for its stestr
workers (:func:`mode_concurrency`, :func:`functional_concurrency`).
"""

import os
import threading


#: ``ci`` tasks running now (:func:`task_started`, :func:`task_ended`).
_TASKS = {"running": 0}
_TASKS_LOCK = threading.Lock()


def task_started():
    """A ``ci`` task (:func:`novaseries.ci.run_tasks`) starts: the stestr
    runs that start from now on share the cores with it."""
    with _TASKS_LOCK:
        _TASKS["running"] += 1


def task_ended():
    """A ``ci`` task has ended (see :func:`task_started`)."""
    with _TASKS_LOCK:
        _TASKS["running"] = max(0, _TASKS["running"] - 1)


def mode_concurrency(count):
    """stestr workers of each of ``count`` modes that run at once: the
    cores shared out between them and the other ``ci`` tasks running now
    (at least 1); None (stestr's default, one per core) for a single mode
    with nothing else running."""
    with _TASKS_LOCK:
        tasks = max(1, _TASKS["running"])
    if count < 2 and tasks < 2:
        return None
    return max(1, (os.cpu_count() or 1) // (count * tasks))


def functional_concurrency(mode, concurrency):
    """stestr workers for a functional run in ``mode`` (None: no mode)
    given the workers ``concurrency`` of its other suites (None: stestr's
    default, one per core): ``functional_workers_per_core`` times as many,
    for a mode whose functional tests mostly wait; else ``concurrency``."""
    per_core = mode.functional_workers_per_core if mode is not None else 1
    if per_core == 1:
        return concurrency
    return per_core * (concurrency or os.cpu_count() or 1)
