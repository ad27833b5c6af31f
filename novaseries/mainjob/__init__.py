"""The main job (``run``): the bug and the fix side by side on real Nova.

Prepares two trees of the target (:data:`novaseries.targets.DEFAULT_TARGET`
unless told) from its series:

* ``reproducer``: the series up to and including the reproducer commit
  (the first patch that adds a test under
  ``nova/tests/functional/regressions/``): Nova as released, plus the test
  fixtures the series adds;
* ``fixed``: what a packager ships: the packaged stack of the target's
  release (:func:`novaseries.targets.stack_target`: every packaged change
  of targets.toml ``[changes]``);

then plays every scenario of ``scenarios/scenario_table.py`` in each tree
(the scenario player, ``python -m novaseries.nova_side.player.play``), in
Nova's functional-test environment (real API, conductor, scheduler,
placement, compute with the real ``ironic.IronicDriver``) against the fake
Ironic (``nova.tests.fixtures.IronicFixture``), judges each observation
against what the tree is expected to do (the checks of each scenario in
``scenarios/scenario_table.py``), prints a table and writes everything as
JSON.

Exit status: 0 when the fixed tree gets every scenario right, 1 otherwise.
The reproducer tree is expected to show the bug; its verdicts are reported
here, and ``ci``'s main job step fails when it shows none (``cisteps``).

Which module does what: ``trees`` prepares the trees and runs the player
(and the benchmark) in them; ``judge`` judges the observations;
``report`` prints the table and writes the JSON; ``benchreport`` the
benchmark's report; ``backends`` is what a fake and a real Ironic run
differ in; ``job`` is the job itself, one loop over the modes
(``job.run``, ``job.run_real``, ``job.play_tree``).
"""
