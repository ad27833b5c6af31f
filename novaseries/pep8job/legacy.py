"""pike's pep8 job beyond flake8: the JSON checks of ``doc/``."""

import pathlib
import subprocess

from novaseries.outcomes import Outcome
from novaseries.pep8job.tools import proc_output, tool_env, tox_commands
from novaseries.util import say

#: pike's ``[testenv:pep8]`` commands, all of which run here: flake8
#: (``flake8_run.run_flake8``) and the two JSON checks of doc/.
LEGACY_PEP8 = (
    "bash tools/flake8wrap.sh {posargs}",
    "bash -c \"! find doc/ -type f -name *.json | xargs grep -U -n $'\\r'\"",
    "bash -c '! find doc/ -type f -name *.json | xargs -t -n1 python -m json.tool 2>&1 "
    "> /dev/null | grep -B1 -v ^python'",
)


def run_legacy(tree, venv, files, label):
    """pike's ``tox -e pep8`` beyond flake8: no carriage return in, and
    ``python -m json.tool`` (the target venv's Python) reads, each touched
    JSON file under ``doc/``; one Outcome counting the two checks that
    ran.  Fails when tox.ini's pep8 commands are not :data:`LEGACY_PEP8`."""
    name = f"{label} pep8 JSON checks"
    commands = tox_commands(tree, "pep8")
    if commands != [" ".join(c.split()) for c in LEGACY_PEP8]:
        say(f"  [{label}] pep8 job: tox.ini [testenv:pep8] runs {commands}, which this "
            "harness does not (novaseries/pep8job/legacy.py LEGACY_PEP8)")
        return [Outcome(name, failed=1, note="config drift: tox.ini [testenv:pep8] is not "
                        "the declared one")]
    docs = [f for f in files if f.startswith("doc/") and f.endswith(".json") and
            pathlib.Path(tree, f).is_file()]
    if not docs:
        return [Outcome(name, note="no JSON file under doc/ touched (flake8: its own line)")]
    carriage, unreadable = {}, {}
    for doc in docs:
        lines = [n for n, line in enumerate(pathlib.Path(tree, doc).read_bytes().split(b"\n"),
                                            start=1) if b"\r" in line]
        if lines:
            carriage[doc] = [f"{doc}:{n}: carriage return" for n in lines]
        proc = subprocess.run([str(pathlib.Path(venv, "bin", "python")), "-m", "json.tool",
                               doc], cwd=tree, stdin=subprocess.DEVNULL, capture_output=True,
                              text=True, errors="replace", env=tool_env(venv))
        if proc.returncode:
            unreadable[doc] = [f"{doc}: python -m json.tool: {proc_output(proc)}"]
    for line in [line for found in (carriage, unreadable) for lines in found.values()
                 for line in lines]:
        say(f"  [{label}] pep8 JSON check FAILED: {line}")
    note = "; ".join(f"{what}: {', '.join(found)}" for what, found in
                     (("carriage returns", carriage), ("not JSON", unreadable)) if found)
    failed = int(bool(carriage)) + int(bool(unreadable))
    return [Outcome(name, passed=2 - failed, failed=failed, note=note)]
