"""``novaseries run --release pike``: pike's scenarios
(``scenarios/pike_table.py``) through nova 16.1.8's whole stack against
the pike-era Ironic, on pristine 16.1.8 and on 16.1.8 with
``patches/pike``; one verdict table, the main job's judge.

:func:`play` starts one :class:`~novaseries.ironic.pike.PikeIronic`
(API and conductor over RabbitMQ) and runs the Python 2.7 player
(``novaseries/nova_side/pike_driver_tests/play_pike_stack.py``) once per
tree in pike's test venv; each scenario writes its observation (the main
job's format) to a folder, read back here.  :func:`run` prepares the pike
target's tree (the patched one) and a scratch worktree of its base (the
pristine one), plays, judges (``judge.evaluate`` with ``pike_table``),
prints the table (``report.table``) and writes the JSON.
"""

import json
import pathlib
import subprocess

from novaseries import targets as targets_mod, tree as tree_mod, util, venv_build, venvs
from novaseries.ironic import driver_runs, pike, run_env
from novaseries.ironic import layout as ironic_layout
from novaseries.mainjob import judge, report
from novaseries.mainjob.report import put
from novaseries import outcomes as outcomes_mod
from novaseries.outcomes import Outcome
from novaseries.scenarios import pike_table
from novaseries.scenarios.checks import find_node
from novaseries.scenarios.scenario import FIXED, REPRODUCER, SCENARIOS_KEY
from novaseries.util import HarnessError

#: The player, a module of the pike driver tests' folder (run by name).
PLAYER = "play_pike_stack"
#: The player's input: the scenarios (JSON) and where it writes.
SCENARIOS_ENV = "PIKESTACK_SCENARIOS"
OUT_ENV = "PIKESTACK_OUT"
#: The player's ``[ironic] api_retry_interval`` (s), for the table.
POLL_INTERVAL = 0.2
#: The run's JSON under ``build/results``.
JSON_NAME = "run-pike.json"
#: Key of a tree's data: the player's exit status and its log (a
#: scenario's set-up or clean-up that failed makes it non-zero).
PLAYER_EXIT = "player_exit"
#: A scenario's verdict when its expected leak is there, on either tree.
KNOWN_LEAK = "known leak: "


def play(runs, test_env, nova_venv, scenarios, out_dir, build=None, root=None):
    """Start one PikeIronic; play ``scenarios`` on each tree.

    :param runs: ``[(label, tree)]``: a pike Nova tree per label of
        ``scenario.TREES``.
    :param test_env: Nova's test environment of pike's target
        (:func:`novaseries.venvs.test_env`).
    :param nova_venv: pike's Nova test venv (Python 2.7).
    :param scenarios: ``pike_table`` scenarios.
    :param out_dir: where each tree's observations and log go
        (``<label>/<scenario>.json``, ``<label>.log``).
    :returns: ``{label: {SCENARIOS_KEY: [observation]}}``, in the order of
        ``scenarios``; a scenario that wrote nothing gets an observation
        whose ``error`` names the log.
    :raises RealIronicError: the Ironic venv, RabbitMQ or Ironic itself
        could not be set up or started.
    """
    out_dir = pathlib.Path(out_dir)
    venv = pike.ensure_venv(build, root)
    python = pathlib.Path(nova_venv) / "bin" / "python"
    folder = str(driver_runs.PIKE_DRIVER_TESTS)
    data = {}
    with pike.PikeIronic(venv, driver_runs.workdir(build)) as ironic:
        for label, tree in runs:
            obs_dir = out_dir / label
            obs_dir.mkdir(parents=True, exist_ok=True)
            for old in obs_dir.glob("*.json"):
                old.unlink()
            env = dict(test_env)
            env.update({
                "PYTHONPATH": f"{tree}:{folder}", run_env.URL: ironic.url,
                run_env.IMAGE_URL: ironic.image_url,
                run_env.IMAGE_MD5: ironic.image_md5,
                SCENARIOS_ENV: json.dumps([sc.describe() for sc in scenarios]),
                OUT_ENV: str(obs_dir)})
            cmd = [str(python), "-m", "unittest", "-v", PLAYER]
            log_path = out_dir / f"{label}.log"
            rc = driver_runs.run_logged(cmd, tree, env, log_path,
                                        f"pike stack: {label} tree {tree}")
            data[label] = {SCENARIOS_KEY: [
                _observation(obs_dir, sc.name, log_path) for sc in scenarios],
                PLAYER_EXIT: [rc, str(log_path)]}
    return data


def _observation(obs_dir, name, log_path):
    path = obs_dir / f"{name}.json"
    if not path.exists():
        return {"scenario": name, "error": f"the player wrote no observation "
                f"(its log: {log_path})", "settled": False}
    return json.loads(path.read_text())


def known_leaks(data):
    """Give the scenarios of ``pike_table.KNOWN_LEAKS`` their verdict on
    each tree: ``known leak: <what>`` when the judge found them as
    expected (``ok`` on the fixed tree, ``as on`` the release on the
    reproducer tree: the leak is checked by the scenario's own checks);
    anything else stays as the judge said."""
    for label in data:
        for obs in data[label][SCENARIOS_KEY]:
            what = pike_table.KNOWN_LEAKS.get(obs["scenario"])
            kind = judge.verdict_kind(obs.get("verdict"))
            if what and kind in (judge.OK, judge.AS_RELEASED):
                obs["verdict"] = KNOWN_LEAK + what


def verdict_problems(data):
    """Why the run fails (list of texts; empty: it passes): a player that
    exited non-zero, a fixed-tree scenario wrong or with no verdict, a
    reproducer-tree scenario unexpected or with no verdict, or the
    reported scenario not showing the bug on the pristine tree."""
    problems = []
    for label in (REPRODUCER, FIXED):
        rc, log = data[label].get(PLAYER_EXIT) or (0, None)
        if rc:
            problems.append(f"{label} tree: the player exited {rc} (a scenario's "
                            f"set-up or clean-up failed; its log: {log})")
        for obs in data[label][SCENARIOS_KEY]:
            kind = judge.verdict_kind(obs.get("verdict"))
            if kind in (judge.WRONG, judge.ERROR, judge.UNEXPECTED):
                problems.append(f"{label} tree, {obs['scenario']}: {obs['verdict']}")
    reported = next((o for o in data[REPRODUCER][SCENARIOS_KEY]
                     if o["scenario"] == pike_table.REPORTED), None)
    if reported is not None and judge.verdict_kind(
            reported.get("verdict")) != judge.BUG_REPRODUCED:
        problems.append(f"the pristine tree does not show the bug in "
                        f"{pike_table.REPORTED}: {reported.get('verdict')}")
    return problems


def compiled(ctx):
    """What ci keeps of this run (which runs outside ci, doc/ci.rst): pike's
    Python 2.7 compiles the player and the modules beside it that it
    imports (every module of the pike driver tests' folder), writing
    nothing; one Outcome, failed with the error (or the exit status) when
    one does not compile, or as the pike target when Python 2.7 is
    missing."""
    target = targets_mod.get(ctx, targets_mod.PIKE_TARGET)
    missing = outcomes_mod.missing_interpreter(target)
    if missing:
        return missing
    venv, _ = venvs.ensure_venv(ctx, target)
    files = sorted(map(str, driver_runs.PIKE_DRIVER_TESTS.glob("*.py")))
    proc = subprocess.run(
        [str(pathlib.Path(venv, "bin", "python")), "-c",
         "import sys\nfor f in sys.argv[1:]: compile(open(f).read(), f, 'exec')", *files],
        capture_output=True, text=True, stdin=subprocess.DEVNULL)
    failed = proc.returncode != 0
    note = ((proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
            if failed else "")
    return Outcome(f"pike whole-stack player compiles (py27, {len(files)} modules)",
                   passed=int(not failed), failed=int(failed), note=note)


def judged(ctx, names=()):
    """Play pike's scenarios (or those named) on pristine nova 16.1.8 and
    with ``patches/pike``, and judge them.

    :returns: the data (``{label: {SCENARIOS_KEY: [observation]}}``,
        each observation with its ``verdict``).
    :raises HarnessError: Python 2.7 missing (pike's target cannot run
        here), an unknown scenario.
    :raises RealIronicError: the pike-era Ironic could not be started.
    """
    unknown = sorted(set(names) - set(pike_table.BY_NAME))
    if unknown:
        raise HarnessError(f"--release pike has no scenario {', '.join(unknown)} "
                           f"(its scenarios: {', '.join(pike_table.BY_NAME)})")
    scenarios = [sc for sc in pike_table.SCENARIOS if not names or sc.name in names]
    target = targets_mod.get(ctx, targets_mod.PIKE_TARGET)
    venv_build.find_interpreter(target.interpreter)  # HarnessError if missing
    tree = tree_mod.prepare(ctx, target)
    venv, _ = venvs.ensure_venv(ctx, target)
    out_dir = ctx.results(ironic_layout.PIKE_RESULTS) / "stack"
    # one run at a time writes the observations; the pristine tree is a
    # worktree of its own (the driver tests' step may run beside this)
    with util.file_lock(out_dir.with_name("stack.lock"), "pike's whole-stack run"), \
            tree_mod.scratch_worktree(tree, tree_mod.BASE_TAG) as pristine:
        data = play([(REPRODUCER, pristine), (FIXED, tree)],
                    venvs.test_env(target, venv, tree), venv, scenarios, out_dir,
                    build=ctx.build, root=ctx.root)
    judge.evaluate(data, released=pike_table.RELEASED, table=pike_table.BY_NAME)
    known_leaks(data)
    return data


def reported_lines(data):
    """The report's scenario (``pike_table.REPORTED``) on each tree as the
    reporter would read it: ``openstack server show``'s status, task
    state and fault, and ``openstack baremetal node show``'s fields of its
    node (lines of text; none when the scenario was not played)."""
    lines = []
    for label in (REPRODUCER, FIXED):
        obs = next((o for o in data.get(label, {}).get(SCENARIOS_KEY, ())
                    if o["scenario"] == pike_table.REPORTED), None)
        if obs is None or obs.get("error"):
            continue
        lines.append(f"{pike_table.REPORTED}, {label} tree: server {obs.get('status')} "
                     f"(vm_state {obs.get('vm_state')}, task_state {obs.get('task_state')}), "
                     f"fault: {obs.get('fault')}")
        node = find_node(obs, obs.get("first_node"))
        if node is None or node.get("deleted"):
            lines.append("    node: deleted (baremetal node show: not found)")
            continue
        lines.append(f"    node {node.get('name')}: "
                     f"provision_state {node.get('provision_state')}, "
                     f"target_provision_state {node.get('target_provision_state')}, "
                     f"instance_uuid {node.get('instance_id')}, "
                     f"maintenance {node.get('maintenance')}, VIFs {node.get('vifs')}")
    return lines


def run(ctx, names=(), json_out=None):
    """``run --release pike``: :func:`judged`, its verdict table, its JSON
    (``build/results/run/run-pike.json``, or ``json_out``).

    :returns: 0 when every verdict is as expected (``verdict_problems``),
        1 otherwise.
    """
    data = judged(ctx, names)
    put(f"pike: {pike_table.RELEASED} as released ({REPRODUCER}) and with "
        f"patches/pike ({FIXED}), whole stack vs Ironic {pike.IRONIC_VERSION}")
    for row in report.table(data, interval=POLL_INTERVAL, wall="wall",
                            by_name=pike_table.BY_NAME):
        put(row)
    put()
    for line in reported_lines(data) + report.unchecked_note(data):
        put(line)
    path = pathlib.Path(json_out or util.results_dir(ctx.build, "run") / JSON_NAME)
    report.write_json(path, data)
    problems = verdict_problems(data)
    for problem in problems:
        put(f"WRONG: {problem}")
    fixed = data[FIXED][SCENARIOS_KEY]
    right = sum(1 for o in fixed
                if judge.verdict_kind(o.get("verdict")) not in (judge.WRONG, judge.ERROR))
    put(f"pike: fixed tree {right} of {len(fixed)} scenarios right; JSON: {path}")
    return 1 if problems else 0
