"""The two backends of a main job run: the fake Ironic of the series
(:class:`Fake`, ``run``) and a real Ironic (``pins/ironic.txt``) per tree
(:class:`Real`, ``run --ironic real``).

What differs between them, and only that: which scenarios they play, what
they start per tree (a real Ironic, stopped when the run ends), which
arguments each tree's player gets, where the results go, the heading of a
mode and the seconds per poll of the table, and where the JSON is written.
:data:`BACKENDS` maps ``--ironic``'s choices to them.
"""

import os
import pathlib
import shutil
import time

from novaseries.ironic import layout as ironic_layout, real_backend, service, venv_setup
from novaseries.mainjob import report, trees as trees_mod
from novaseries.mainjob.report import put
from novaseries.scenarios import scenario_table
from novaseries.util import HarnessError, say

#: ``[fake]`` options of the real Ironic of ``run --ironic real``: each
#: fake power and boot action (``fake_delays``), and each call of the
#: ``fake`` deploy interface, takes ``real_backend.FAKE_DELAY`` seconds
#: (why: there).
REAL_EXTRA_CONF = service.fake_deploy_conf(real_backend.FAKE_DELAY)

#: The backends' names: ``--ironic``'s choices (:data:`BACKENDS`), the
#: fake one the default.
FAKE = 'fake'
REAL = 'real'


def real_scenarios(names=()):
    """The scenarios ``run --ironic real`` plays: ``names`` (each must be
    playable) or every playable one.

    :raises HarnessError: a scenario a real Ironic cannot play, with why.
    """
    if not names:
        return [s.name for s in scenario_table.SCENARIOS
                if s.real_unplayable is None]
    refused = [f"{n}: {scenario_table.BY_NAME[n].real_unplayable}" for n in names
               if scenario_table.BY_NAME[n].real_unplayable is not None]
    if refused:
        raise HarnessError("--ironic real cannot play " + '; '.join(refused))
    return list(names)


#: The file name of a run's JSON: a fake run's in ``build/results/run``
#: (:func:`fake_json`), a real run's in its folder (:func:`real_outdir`).
RUN_JSON = 'run.json'
#: The copy of the latest real run's JSON in ``build/results/run``.
REAL_RUN_JSON = 'run-real.json'
#: ``run --tree``'s JSON in ``build/results/run``.
TREE_JSON = 'tree.json'


def fake_json(ctx):
    """Where a fake run writes its JSON unless told:
    ``build/results/run/``:data:`RUN_JSON`."""
    return ctx.results(trees_mod.RESULTS) / RUN_JSON


def real_outdir(ctx, runid):
    """The folder of the real run ``runid``: ``build/results/run/real/<runid>``."""
    return ctx.results(trees_mod.RESULTS) / REAL / runid


class Fake:
    """The fake Ironic of the series (``nova.tests.fixtures.
    IronicFixture``), inside each tree's player: nothing to start.

    :param ctx: the Context; ``trees`` ({label: path}) and ``stack`` (a
        contextlib.ExitStack) are the real backend's.
    """

    #: the benchmark runs on it
    bench = True
    #: seconds per poll in the table: Nova's default interval (the fake
    #: run polls at 0) and the wall-time column's title
    interval = report.DEFAULT_API_RETRY_INTERVAL
    wall = report.WALL_AT_ZERO
    #: where the players write (None: ``build/results/run``)
    outdir = None
    #: the run writes ``build/results/run`` itself: one such run (and
    #: ``run --tree``) per build directory at a time (``job.owned``)
    exclusive = True

    def __init__(self, ctx, trees, stack):
        self.ctx = ctx

    @staticmethod
    def scenarios(names, bench):
        """The scenarios to play: ``names``, or all of them (none with
        ``bench``: the benchmark alone)."""
        return list(names) or ([] if bench else
                               [s.name for s in scenario_table.SCENARIOS])

    def facts(self):
        """What the run's JSON says about the backend (nothing)."""
        return {}

    def running(self, mode, scenarios, trees):
        """The progress line before a mode's scenarios."""
        return (f"{mode} mode: running {scenarios} scenarios in {trees} "
                "trees (in parallel)...")

    def heading(self, mode, description):
        """A mode's heading in the result."""
        return f"=== {mode} mode: {description}"

    def player_args(self, target, trees):
        """{label: more arguments of the player} in ``target``'s mode."""
        return None

    def save(self, result, json_out):
        """Write the run's JSON (``json_out``, default
        ``build/results/run/run.json``); return its path."""
        out = pathlib.Path(json_out) if json_out else \
            fake_json(self.ctx)
        report.write_json(out, result)
        put(f"\nJSON: {out}")
        return out


class Real:
    """A real Ironic (``pins/ironic.txt``) on 127.0.0.1 per tree (``novaseries.
    ironic.service``), started here and stopped with ``stack``; each tree's
    player binds the scenarios to its Ironic (``ironic/real_backend.py``).
    Results go to ``build/results/run/real/<runid>/``: each tree's
    observations, each scenario's requests (``<tree>.<mode>/<scenario>.
    requests.jsonl``), the Ironics' logs and the run's ``run.json``.

    :raises HarnessError: an Ironic that did not start.
    """

    bench = False
    wall = 'wall'
    #: each run writes its own ``real/<runid>`` folder
    exclusive = False

    def __init__(self, ctx, trees, stack):
        self.ctx = ctx
        self.interval = real_backend.API_RETRY_INTERVAL
        venv = venv_setup.ensure_venv(ctx.build, ctx.root)
        self.runid = f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
        self.outdir = real_outdir(ctx, self.runid)
        self.outdir.mkdir(parents=True)
        self.ironics = {}
        for label in trees:
            ironic = service.RealIronic(
                venv=venv, workdir=ironic_layout.workdir(ctx.build),
                fake_delays=real_backend.FAKE_DELAY, extra_conf=REAL_EXTRA_CONF)
            stack.enter_context(ironic)
            stack.callback(_keep_log, ironic,
                           self.outdir / f"ironic-{label}.log")
            say(f"real Ironic for {label}: {ironic.url} "
                f"(started in {ironic.start_seconds:.1f} s)")
            info = self.outdir / f"ironic-{label}.json"
            report.write_json(info, {key: getattr(ironic, key)
                                     for key in real_backend.INFO_KEYS})
            self.ironics[label] = info

    @staticmethod
    def scenarios(names, bench):
        """The scenarios a real Ironic plays (:func:`real_scenarios`)."""
        return real_scenarios(names)

    def facts(self):
        return {'ironic': REAL, report.RUNID_KEY: self.runid}

    def running(self, mode, scenarios, trees):
        return (f"{mode} mode: running {scenarios} scenarios against real "
                f"Ironics in {trees} trees (in parallel)...")

    def heading(self, mode, description):
        return (f"=== {mode} mode, real Ironic {service.IRONIC_VERSION}: "
                f"{description}")

    def player_args(self, target, trees):
        """The tree's Ironic and a new folder for its requests in
        ``target``'s mode."""
        extra = {}
        for label in trees:
            requests = self.outdir / trees_mod.result_stem(label, target)
            requests.mkdir()
            extra[label] = ['--ironic', REAL, '--ironic-info',
                            str(self.ironics[label]), '--requests-dir',
                            str(requests)]
        return extra

    def save(self, result, json_out):
        """Write the run's JSON in its folder and copy it to ``json_out``
        (default ``build/results/run/run-real.json``, the latest run's);
        return this run's own."""
        own = self.outdir / RUN_JSON
        report.write_json(own, result)
        out = pathlib.Path(json_out) if json_out else \
            self.ctx.results(trees_mod.RESULTS) / REAL_RUN_JSON
        report.write_json(out, result)
        put(f"\nJSON: {own} (copied to {out}); requests and Ironic logs: "
            f"{self.outdir}")
        return own


def _keep_log(ironic, dest):
    """Copy a RealIronic's log into the results (before its stop)."""
    if ironic.log_path and ironic.log_path.exists():
        shutil.copyfile(ironic.log_path, dest)


#: ``--ironic``'s choices.
BACKENDS = {FAKE: Fake, REAL: Real}
