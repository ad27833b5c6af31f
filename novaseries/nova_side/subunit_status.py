"""Print the last status of every test of a subunit v2 stream, as JSON.

Run inside a Nova venv (Python 2.7 or 3: python-subunit and testtools,
which stestr needs anyway): ``python subunit_status.py < stream.subunit``
prints ``{test_id: status}``, where status is subunit's own (``success``,
``fail``, ``skip``, ``xfail``, ``uxsuccess``, ...) for a test that ended,
``inprogress`` for one that started and never ended (its worker died
under it) and ``exists`` for one a worker listed and never started.
``subunit2csv`` drops the last two, and fails on a test left in progress.
"""

import json
import sys

import subunit
import testtools


def statuses(stream):
    """``{test_id: last status}`` of the subunit v2 byte ``stream``."""
    found = {}

    def on_test(test):
        found[test['id']] = test['status']
    result = testtools.StreamToDict(on_test)
    result.startTestRun()
    try:
        subunit.ByteStreamToStreamResult(
            stream, non_subunit_name='stdout').run(result)
    finally:
        result.stopTestRun()
    return found


def main():
    stream = getattr(sys.stdin, 'buffer', sys.stdin)
    json.dump(statuses(stream), sys.stdout, sort_keys=True)
    sys.stdout.write('\n')


if __name__ == '__main__':
    main()
