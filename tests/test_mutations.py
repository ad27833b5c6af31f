"""novaseries.mutations and ``novaseries mutate``: the declared mutations
land where they say, change what the driver reads and nothing else, and
refuse a tree they do not fit."""

import argparse
import contextlib
import io
import pathlib
import shutil
import tempfile
import textwrap
import unittest
from unittest import mock

from novaseries import mutations, selecting, targets, testrun, util
from novaseries import tree as tree_mod
from novaseries.commands import mutate
from novaseries.outcomes import Outcome
from novaseries.util import HarnessError
from tests import helpers

#: A driver shaped as the series' (the tear-down wait in
#: _wait_for_teardown's _poll), small enough to run.
SERIES_DRIVER = textwrap.dedent('''\
    class IronicDriver(object):
        """A driver."""

        def __init__(self, connection):
            self._connection = connection

        @property
        def ironic_connection(self):
            return self._connection

        def _wait_for_active(self, instance):
            """Poll once."""
            return 'polled'

        def _wait_for_teardown(self, instance, polls):
            def _poll():
                return 'teardown-polled'
            return _poll()

        def destroy(self, context, instance, network_info):
            """Destroy.

            Many lines.
            """
            if instance:
                return 'destroyed'
    ''')

#: 34.0.0's shape: the tear-down wait inside _unprovision.
RELEASE_DRIVER = SERIES_DRIVER.replace(
    "def _wait_for_teardown(self, instance, polls):\n        def _poll():",
    "def _unprovision(self, instance, node):\n        def _wait_for_provision_state():"
).replace("return _poll()", "return _wait_for_provision_state()")


class Connection(object):
    """A stand-in SDK connection that counts ``nodes()`` calls."""

    def __init__(self, fail=False):
        self.reads, self.fail = [], fail

    def nodes(self, **query):
        self.reads.append(query)
        if self.fail:
            raise RuntimeError("Ironic is down")
        return iter([])

    def get_node(self, node):
        self.reads.append(node)
        return None


class Instance(object):
    uuid = "instance-uuid"
    node = "node-uuid"


def load(path):
    """The IronicDriver class of the module at ``path``."""
    scope = {}
    exec(compile(path.read_text(), str(path), "exec"), scope)
    return scope["IronicDriver"]


class ApplyTest(unittest.TestCase):

    def setUp(self):
        self.tree = pathlib.Path(tempfile.mkdtemp(prefix="novaseries-mutation-"))
        self.addCleanup(shutil.rmtree, self.tree, ignore_errors=True)
        self.driver = self.tree / "nova/virt/ironic/driver.py"
        self.driver.parent.mkdir(parents=True)
        self.extra_read = mutations.get("extra-read")

    def test_each_wait_and_destroy_read_once_more(self):
        for text, teardown, wait in (
                (SERIES_DRIVER, "IronicDriver._wait_for_teardown._poll", "_wait_for_teardown"),
                (RELEASE_DRIVER, "IronicDriver._unprovision._wait_for_provision_state",
                 "_unprovision")):
            with self.subTest(teardown=teardown):
                self.driver.write_text(text)
                before = load(self.driver)
                done = mutations.apply(self.tree, self.extra_read)
                self.assertEqual(["IronicDriver._wait_for_active", teardown,
                                  "IronicDriver.destroy"], [name for name, _ in done])
                lines = self.driver.read_text().splitlines()
                for _, line in done:  # the reported lines are the inserted ones
                    self.assertIn("novaseries mutation extra-read", lines[line - 1])
                after = load(self.driver)
                for cls, extra in ((before, 0), (after, 1)):
                    connection, instance = Connection(), Instance()
                    driver = cls(connection)
                    # behaviour unchanged, one more read each
                    self.assertEqual("polled", driver._wait_for_active(instance))
                    self.assertEqual("teardown-polled", getattr(driver, wait)(instance, 1))
                    self.assertEqual("destroyed", driver.destroy(None, instance, None))
                    self.assertEqual([{"instance_id": "instance-uuid"}] * 3 * extra,
                                     connection.reads)

    def test_extra_get_node_reads_with_get_node(self):
        self.driver.write_text(SERIES_DRIVER)
        mutations.apply(self.tree, mutations.get("extra-get-node"))
        connection = Connection()
        driver = load(self.driver)(connection)
        driver._wait_for_active(Instance())
        driver.destroy(None, Instance(), None)
        self.assertEqual(["node-uuid", "node-uuid"], connection.reads)

    def test_a_failing_read_changes_nothing(self):
        self.driver.write_text(SERIES_DRIVER)
        mutations.apply(self.tree, self.extra_read)
        connection = Connection(fail=True)
        driver = load(self.driver)(connection)
        self.assertEqual("destroyed", driver.destroy(None, Instance(), None))
        self.assertEqual(1, len(connection.reads))

    def test_the_docstring_stays_first(self):
        self.driver.write_text(SERIES_DRIVER)
        mutations.apply(self.tree, self.extra_read)
        cls = load(self.driver)
        self.assertEqual("Destroy.\n\n        Many lines.\n        ", cls.destroy.__doc__)
        self.assertEqual("Poll once.", cls._wait_for_active.__doc__)

    def test_missing_anchors_are_all_named_and_change_nothing(self):
        text = SERIES_DRIVER.replace("def _poll():", "def _other():").replace(
            "return _poll()", "return _other()").replace("def destroy(", "def remove(")
        self.driver.write_text(text)
        with self.assertRaises(HarnessError) as caught:
            mutations.apply(self.tree, self.extra_read)
        self.assertIn("nova/virt/ironic/driver.py has no IronicDriver.destroy; no "
                      "IronicDriver._wait_for_teardown._poll or "
                      "IronicDriver._unprovision._wait_for_provision_state",
                      str(caught.exception))
        self.assertEqual(text, self.driver.read_text())

    def test_a_decorated_first_statement_gets_the_code_above_its_decorator(self):
        self.driver.write_text(SERIES_DRIVER.replace(
            "        if instance:\n            return 'destroyed'",
            "        @(lambda f: f)\n        def helper():\n            return 'destroyed'\n"
            "        if instance:\n            return helper()"))
        done = dict(mutations.apply(self.tree, self.extra_read))
        lines = self.driver.read_text().splitlines()
        line = done["IronicDriver.destroy"]
        self.assertEqual("        try:  # novaseries mutation extra-read: one more read "
                         "of the node", lines[line - 1])
        self.assertEqual("        @(lambda f: f)", lines[line + 3])
        connection = Connection()
        self.assertEqual("destroyed",
                         load(self.driver)(connection).destroy(None, Instance(), None))
        self.assertEqual(1, len(connection.reads))

    def test_bodies_with_no_place_for_the_code_are_refused(self):
        for old, new, error in (
                ("        \"\"\"Poll once.\"\"\"\n        return 'polled'",
                 "        \"\"\"Poll once.\"\"\"",
                 "_wait_for_active has no statement after its docstring"),
                ("    def _wait_for_active(self, instance):\n"
                 "        \"\"\"Poll once.\"\"\"\n        return 'polled'",
                 "    def _wait_for_active(self, instance): return 'polled'",
                 "_wait_for_active's first statement does not start its line"),
                ("        \"\"\"Poll once.\"\"\"\n        return 'polled'",
                 "        \"\"\"Poll once.\"\"\"; return 'polled'",
                 "_wait_for_active's first statement does not start its line")):
            with self.subTest(error=error):
                text = SERIES_DRIVER.replace(old, new)
                self.assertNotEqual(SERIES_DRIVER, text)
                self.assertRefused(text, error)

    def test_a_driver_the_read_cannot_reach_is_refused(self):
        # pike's driver talks to Ironic through ironicclient: the read
        # would fail, be swallowed, and every test would pass; a mention of
        # ironic_connection in a docstring is not the function
        pike = SERIES_DRIVER.replace("ironic_connection", "ironicclient")
        for text in (pike, pike.replace('"""A driver."""',
                                        '"""A driver (no def ironic_connection(self) here)."""')):
            with self.subTest(text=text[:80]):
                self.assertRefused(text, "has no IronicDriver.ironic_connection: the "
                                   "mutation would do nothing there")

    def test_an_edit_that_would_not_compile_is_refused(self):
        for why, text in (
                # the code goes in indented with spaces, which Python refuses
                # to mix with the tabs of the lines after it
                ("a tab-indented driver", SERIES_DRIVER.replace("    ", "\t")),
                # parses, but the inserted read uses ``instance`` before the
                # function's nonlocal declaration of it: only compile() says so
                ("nonlocal", SERIES_DRIVER.replace(
                    "        def _poll():\n",
                    "        def _poll():\n            nonlocal instance\n"))):
            with self.subTest(why=why):
                self.assertNotEqual(SERIES_DRIVER, text)
                self.assertRefused(text, "would not compile once mutated .* left as it was")

    def assertRefused(self, text, error):
        """apply() on a driver of ``text`` raises ``error`` and leaves it."""
        self.driver.write_text(text)
        with self.assertRaisesRegex(HarnessError, error):
            mutations.apply(self.tree, self.extra_read)
        self.assertEqual(text, self.driver.read_text())

    def test_a_missing_or_broken_file_is_refused(self):
        with self.assertRaisesRegex(HarnessError, "driver.py does not exist"):
            mutations.apply(self.tree, self.extra_read)
        self.driver.write_text("def broken(:\n")
        with self.assertRaisesRegex(HarnessError, "does not parse"):
            mutations.apply(self.tree, self.extra_read)

    def test_an_unknown_mutation_lists_the_known(self):
        with self.assertRaisesRegex(HarnessError, "unknown mutation 'nope' .known: "
                                    "extra-read, extra-get-node"):
            mutations.get("nope")


class MutateCommandTest(helpers.ProjectTestCase):
    """``novaseries mutate``: the mutation in a scratch worktree, the
    series' functional modules only, the tree itself untouched."""

    def setUp(self):
        super().setUp()
        self.tree = tree_mod.prepare(self.ctx, self.target)
        helpers.commit(self.tree, {"nova/virt/ironic/driver.py": SERIES_DRIVER,
                                   "nova/tests/functional/test_thing.py": "# a test\n"},
                       helpers.message("Add a driver and a test"))

    def moded(self):
        """Target ``fake`` with one concurrency mode, ``a``."""
        toml = (self.root / "targets" / "targets.toml")
        toml.write_text(toml.read_text() + "\n[modes.a]\n[targets.fake.modes.a]\n")
        return targets.get(self.ctx, "fake")

    def run_command(self, target):
        seen, self.events = {}, []

        def test_modes(ctx, moded, work, label, flake8):
            self.events.append("run")
            seen.update(target=moded, label=label, flake8=flake8,
                        driver=pathlib.Path(work, "nova/virt/ironic/driver.py").read_text(),
                        modules=selecting.functional_modules(work))
            return [Outcome(label, passed=1)]
        args = argparse.Namespace(target="fake", tree=None, mode=None, mutation="extra-read")
        with mock.patch.object(testrun, "test_modes", test_modes), \
                mock.patch.object(mutate.common, "target", lambda ctx, a: target), \
                contextlib.redirect_stdout(io.StringIO()):
            rc = mutate.run(self.ctx, args)
        return rc, seen

    def test_runs_the_series_functional_modules_on_the_mutated_copy(self):
        rc, seen = self.run_command(self.moded())
        self.assertEqual(0, rc)
        self.assertIn("novaseries mutation extra-read", seen["driver"])
        self.assertEqual(["nova.tests.functional.test_thing"], seen["modules"])
        self.assertFalse(seen["flake8"])
        self.assertEqual([], seen["target"].functional)
        self.assertEqual("fake mutated extra-read", seen["label"])
        # the prepared tree is untouched
        self.assertEqual(SERIES_DRIVER, (self.tree / "nova/virt/ironic/driver.py").read_text())
        self.assertEqual("", util.git(self.tree, "status", "--porcelain"))
        # and the scratch worktree is gone
        self.assertEqual(1, len(util.git(self.tree, "worktree", "list").splitlines()))

    def test_modes_run_the_functional_suite_alone(self):
        toml = (self.root / "targets" / "targets.toml")
        toml.write_text(toml.read_text() + textwrap.dedent('''
            [modes.a]
            [modes.b]
            [targets.fake.modes.a]
            functional = ["nova.tests.functional.test_servers"]
            [targets.fake.modes.b]
            suites = ["unit"]
            '''))
        target = targets.get(self.ctx, "fake")
        only = mutate.functional_suite_only(target.only_modes(["a"]))
        self.assertEqual(["a"], list(only.modes))
        self.assertEqual(("functional",), only.modes["a"].suites)
        self.assertEqual([], only.in_mode("a").functional)
        with self.assertRaisesRegex(HarnessError, "mode b runs no functional tests .choose "
                                    "the others with --mode"):
            mutate.functional_suite_only(target)
        with self.assertRaisesRegex(HarnessError, "has no concurrency modes"):
            mutate.functional_suite_only(self.target)

    def test_one_mutate_of_a_target_at_a_time(self):
        @contextlib.contextmanager
        def file_lock(path, what):
            self.events.append(path)
            yield
            self.events.append("released")

        with mock.patch.object(mutate, "file_lock", file_lock):
            rc, seen = self.run_command(self.moded())
        # the tests run while the lock is held
        self.assertEqual([self.ctx.results("fake") / "mutate.lock", "run", "released"],
                         self.events)
        self.assertIn("novaseries mutation extra-read", seen["driver"])

    def test_a_refused_mutation_leaves_no_worktree(self):
        helpers.commit(self.tree, {"nova/virt/ironic/driver.py":
                                   SERIES_DRIVER.replace("ironic_connection", "ironicclient")},
                       helpers.message("Talk through ironicclient"))
        with self.assertRaisesRegex(HarnessError, "would do nothing there"):
            self.run_command(self.moded())
        self.assertEqual(1, len(util.git(self.tree, "worktree", "list").splitlines()))
        self.assertEqual("", util.git(self.tree, "status", "--porcelain"))

    def test_a_series_without_functional_tests_is_refused(self):
        util.git(self.tree, "reset", "-q", "--hard", "HEAD~1")
        helpers.commit(self.tree, {"nova/virt/ironic/driver.py": SERIES_DRIVER},
                       helpers.message("Add a driver"))
        with self.assertRaisesRegex(HarnessError, "touches no functional test module"):
            self.run_command(self.moded())


if __name__ == "__main__":
    unittest.main()
