"""novaseries.pep8job: the checks of each release's pep8 job.

Most tests run the package's real logic (hook selection, the scratch copy
of the fixers, the drift guard, the JSON and mypy commands) against stub
tools: small Python scripts in a throw-away tool venv that act as the
real ones would on what the tests plant (and record how they were
called), with the tree's config given as its parsed form (in a real run
PyYAML and identify read it, inside the tool venv: novaseries.nova_side.pep8probe).
:class:`RealToolsTest` plants the same errors for the real tools of
``build/venvs/pep8-master`` and checks the declarations against the
prepared trees; it is skipped where the harness has not built that venv
or prepared those trees yet (no network in tests).
"""

import fcntl
import json
import os
import pathlib
import shutil
import sys
import tempfile
import unittest
from unittest import mock

from novaseries import flake8_run, pep8job, selecting, testrun, util, venv_build, venvs
from novaseries.pep8job import legacy, mypy_run, plan as pep8_plan, tools
from novaseries.outcomes import Outcome
from tests import helpers

PRE_COMMIT_HOOKS = "https://github.com/pre-commit/pre-commit-hooks"
LUCAS_C = "https://github.com/Lucas-C/pre-commit-hooks"
AUTOPEP8 = "https://github.com/hhatto/autopep8"
HACKING = "https://opendev.org/openstack/hacking"
CODESPELL = "https://github.com/codespell-project/codespell"
SPHINX_LINT = "https://github.com/sphinx-contrib/sphinx-lint"
MIRRORS_MYPY = "https://github.com/pre-commit/mirrors-mypy"

#: A config as PyYAML gives it, in the shape of nova 34.0.0's (its own
#: values, not a copy of the file).
CONFIG = {"repos": [
    {"repo": PRE_COMMIT_HOOKS, "rev": "v6.0.0", "hooks": [
        {"id": "trailing-whitespace"},
        {"id": "mixed-line-ending", "args": ["--fix", "lf"], "exclude": r".*\.(svg)$"},
        {"id": "check-added-large-files"},
        {"id": "check-docstring-first", "exclude": "nova/virt/ironic/ironic_states.py"}]},
    {"repo": LUCAS_C, "rev": "v1.5.6", "hooks": [
        {"id": "remove-tabs", "exclude": r".*\.(svg)$"}]},
    {"repo": AUTOPEP8, "rev": "v2.3.2", "hooks": [{"id": "autopep8", "files": r"^.*\.py$"}]},
    {"repo": HACKING, "rev": "8.0.0", "hooks": [
        {"id": "hacking", "additional_dependencies": [],
         "exclude": "^(doc|releasenotes|tools)/.*$"}]},
    {"repo": CODESPELL, "rev": "v2.4.1", "hooks": [
        {"id": "codespell", "args": ["--ignore-words=doc/dictionary.txt"]}]},
    {"repo": SPHINX_LINT, "rev": "v1.0.2", "hooks": [
        {"id": "sphinx-lint", "args": ["--enable=default-role"],
         "files": "^doc/|releasenotes|api-guide", "types": ["rst"]}]},
]}

PEP8_PINS = ("pre-commit-hooks==6.0.0\nautopep8==2.3.2\ncodespell==2.4.1\nsphinx-lint==1.0.2\n"
             "mypy==1.15.0\ntypes-paramiko==3.5.0\n")
HACKING_PINS = ("flake8==7.3.0\nhacking==8.0.0\nmccabe==0.7.0\npycodestyle==2.14.0\n"
                "pyflakes==3.4.0\n")
TOX = ("[testenv:pep8]\ncommands =\n  pre-commit run --all-files --show-diff-on-failure\n"
       "  {[testenv:mypy]commands}\n\n[testenv:mypy]\ndeps =\n  mypy\n  types-paramiko\n"
       "commands =\n  mypy\n")
PYPROJECT = "[tool.autopep8]\naggressive = 3\nin-place = true\n"

#: One stub for every tool, acting by the name it is called by; each
#: call is recorded (argv, cwd) in calls.jsonl beside bin/.
STUB = r'''#!PYTHON
import json, os, pathlib, sys
name, args = os.path.basename(sys.argv[0]), sys.argv[1:]
with open(pathlib.Path(sys.argv[0]).resolve().parent.parent / "calls.jsonl", "a") as log:
    log.write(json.dumps([name, args, os.getcwd()]) + "\n")
files = [a for a in args if not a.startswith("-") and os.path.isfile(a)]
if name == "mypy" and not files:  # the files of its config: here all
    files = sorted(str(p) for p in pathlib.Path(".").rglob("*.py"))
status = 0
if name == "trailing-whitespace-fixer":
    for f in files:
        text = open(f).read()
        fixed = "".join(line.rstrip() + "\n" for line in text.splitlines())
        if fixed != text:
            open(f, "w").write(fixed)
            print("Fixing " + f)
            status = 1
elif name == "autopep8":  # changes what it fixes, exits 0 (as autopep8 -i)
    config = pathlib.Path("pyproject.toml")
    if config.is_file() and "aggressive = 3" in config.read_text():
        for f in files:
            text = open(f).read()
            if "x=1" in text:
                open(f, "w").write(text.replace("x=1", "x = 1"))
elif name in ("codespell", "flake8", "check-docstring-first", "mypy"):
    word = {"codespell": "teh", "flake8": "# hacking-error", "mypy": "# type-error",
            "check-docstring-first": '"' * 3 + "late"}[name]
    for f in files:
        for n, line in enumerate(open(f), start=1):
            if word in line:
                print(f"{f}:{n}: {name} found {word}")
                status = 65 if name == "codespell" else 1
sys.exit(status)
'''.replace("PYTHON", sys.executable, 1)
TOOLS = ("trailing-whitespace-fixer", "mixed-line-ending", "check-added-large-files",
         "check-docstring-first", "autopep8", "codespell", "sphinx-lint", "flake8", "mypy")


def fake_tags(tree, path):
    """Tags as identify gives them, for the files the tests write."""
    tags = {"file", "text"}
    tags.add("executable" if os.access(pathlib.Path(tree, path), os.X_OK)
             else "non-executable")
    tags |= {".py": {"python"}, ".rst": {"rst"}, ".yaml": {"yaml"}, ".json": {"json"},
             ".svg": {"svg", "xml", "image"}}.get(pathlib.PurePath(path).suffix, set())
    return sorted(tags)


def make_venv(folder, tools=TOOLS):
    """A stub tool venv: bin/<tool> for each of ``tools``, bin/python the
    harness's own."""
    (folder / "bin").mkdir(parents=True)
    for tool in tools:
        path = folder / "bin" / tool
        path.write_text(STUB)
        path.chmod(0o755)
    (folder / "bin" / "python").symlink_to(sys.executable)
    return folder


def calls(venv):
    """``[(tool, args, cwd)]`` the stubs of ``venv`` recorded."""
    path = venv / "calls.jsonl"
    return [tuple(json.loads(line)) for line in path.read_text().splitlines()] \
        if path.is_file() else []


class Pep8Case(helpers.ProjectTestCase):
    """A project with target ``fake`` (release ``fake``: pins/pep8-fake.txt,
    pins/hacking-8.0.0.txt) and a Nova-like tree with a ``base`` tag; the
    tool venvs are stubs (:data:`STUB`), the config :attr:`config`."""

    config = CONFIG

    def setUp(self):
        super().setUp()
        (self.root / "pins" / "pep8-fake.txt").write_text(PEP8_PINS)
        (self.root / "pins" / "hacking-8.0.0.txt").write_text(HACKING_PINS)
        self.tree = self.tmp / "tree"
        self.tree.mkdir()
        util.git(self.tree, "init", "-q")
        helpers.commit(self.tree, {".pre-commit-config.yaml": "(parsed in the tests)\n",
                                   "tox.ini": TOX, "pyproject.toml": PYPROJECT,
                                   "nova/__init__.py": "", "nova/old.py": "old = 1\n",
                                   "doc/dictionary.txt": "\n"}, "base")
        util.git(self.tree, "tag", "base")
        self.venvs = {name: make_venv(self.tmp / "venvs" / name)
                      for name in ("pep8-fake", "hacking-8.0.0")}
        self.patch(tools, "tool_venv", lambda ctx, name: self.venvs[name])
        self.patch(tools, "probe", self.fake_probe)

    def patch(self, target, name, value):
        patcher = mock.patch.object(target, name, value)
        patcher.start()
        self.addCleanup(patcher.stop)

    def fake_probe(self, venv, tree, files):
        self.assertEqual(self.venvs["pep8-fake"], venv)
        return self.config, {f: fake_tags(tree, f) for f in files}

    def commit(self, files):
        """Commit ``files`` ({path: text}) on the tree; the commit's id."""
        return helpers.commit(self.tree, files, "change")

    def run_at(self, rev="HEAD", touched=None):
        """pep8job.run on the tree; its single Outcome."""
        [outcome] = pep8job.run(self.ctx, self.target, self.tree, self.tmp / "novavenv",
                                rev=rev, label="fake", touched=touched)
        self.assertEqual("", util.git(self.tree, "status", "--porcelain"),
                         "the check wrote in the tree")
        return outcome

    def hook_calls(self, tool):
        venv = self.venvs["hacking-8.0.0" if tool == "flake8" else "pep8-fake"]
        return [(args, cwd) for name, args, cwd in calls(venv) if name == tool]


class HooksTest(Pep8Case):
    """The hooks on the touched files: each with its filters, a fixer on a
    scratch copy, a failure naming the hook, the file and the line."""

    def test_a_clean_change_passes_every_hook_with_its_files(self):
        self.commit({"nova/clean.py": '"""Clean."""\nx = 1\n', "doc/source/a.rst": "Fine.\n",
                     "tools/helper.py": '"""Helper."""\n', "icon.svg": "<svg/>\n"})
        outcome = self.run_at()
        self.assertEqual((0, "fake pep8 hooks (4 files)"), (outcome.failed, outcome.name))
        # trailing-whitespace, mixed-line-ending, check-added-large-files,
        # check-docstring-first, remove-tabs, autopep8, hacking, codespell,
        # sphinx-lint
        self.assertEqual(9, outcome.passed, outcome)
        [(args, cwd)] = self.hook_calls("autopep8")
        self.assertEqual(["-i", "nova/clean.py", "tools/helper.py"], args)
        self.assertNotEqual(str(self.tree), cwd)  # a scratch copy
        self.assertEqual([(["nova/clean.py"], str(self.tree))], self.hook_calls("flake8"))
        self.assertEqual(["--enable=default-role", "doc/source/a.rst"],
                         self.hook_calls("sphinx-lint")[0][0])
        self.assertEqual(["--fix", "lf", "doc/source/a.rst", "nova/clean.py",
                          "tools/helper.py"], self.hook_calls("mixed-line-ending")[0][0])
        self.assertEqual(["--ignore-words=doc/dictionary.txt", "doc/source/a.rst",
                          "icon.svg", "nova/clean.py", "tools/helper.py"],
                         self.hook_calls("codespell")[0][0])

    def test_trailing_whitespace_fails_with_the_file_and_line(self):
        self.commit({"nova/a.py": '"""A."""\nx = 1   \n'})
        outcome = self.run_at()
        self.assertEqual(1, outcome.failed)
        self.assertIn("failed: trailing-whitespace (nova/a.py)", outcome.note)
        log = self.log.getvalue()
        self.assertIn("pep8 hook trailing-whitespace", log)
        self.assertIn("nova/a.py:2: trailing-whitespace-fixer changes 'x = 1   \\n'", log)
        self.assertIn("+x = 1", log)
        self.assertEqual('"""A."""\nx = 1   \n', (self.tree / "nova/a.py").read_text())

    def test_a_fixer_change_fails_though_it_exits_zero(self):
        # autopep8 -i exits 0 after changing a file; it reads its settings
        # from the tree's root files, which the scratch copy has
        self.commit({"nova/a.py": '"""A."""\nx=1\n'})
        outcome = self.run_at()
        self.assertEqual(1, outcome.failed)
        self.assertIn("failed: autopep8 (nova/a.py)", outcome.note)
        self.assertIn("nova/a.py:2: autopep8 changes 'x=1\\n'", self.log.getvalue())

    def test_a_check_that_exits_non_zero_fails_with_its_output(self):
        self.commit({"doc/source/a.rst": "Fine.\n", "nova/b.py": '"""B."""\n# teh end\n'})
        outcome = self.run_at()
        self.assertEqual(1, outcome.failed)
        self.assertIn("failed: codespell (doc/source/a.rst, nova/b.py)", outcome.note)
        self.assertIn("nova/b.py:2: codespell found teh", self.log.getvalue())

    def test_docstring_after_code(self):
        self.commit({"nova/a.py": 'x = 1\n"""late"""\n'})
        self.assertIn("failed: check-docstring-first (nova/a.py)", self.run_at().note)

    def test_tabs_are_checked_here_except_where_the_config_excludes(self):
        self.commit({"nova/a.py": '"""A."""\nif x:\n\tpass\n', "icon.svg": "<svg>\t</svg>\n"})
        outcome = self.run_at()
        self.assertEqual(1, outcome.failed)
        self.assertIn("failed: remove-tabs (nova/a.py)", outcome.note)
        self.assertIn("nova/a.py:3: remove-tabs: a tab", self.log.getvalue())
        self.assertNotIn("icon.svg:", self.log.getvalue())

    def test_a_commit_checks_its_own_files_and_only_those_it_adds_for_size(self):
        self.commit({"nova/first.py": '"""First."""\n'})
        rev = self.commit({"nova/new.py": '"""New."""\n', "nova/old.py": "old = 2\n"})
        self.assertEqual(0, self.run_at(rev, touched=["nova/new.py", "nova/old.py",
                                                      "nova/gone.py", ""]).failed)
        [(args, _)] = self.hook_calls("check-added-large-files")
        self.assertEqual(["--enforce-all", "nova/new.py"], args)
        self.assertEqual(["nova/new.py", "nova/old.py"], self.hook_calls("flake8")[0][0])

    def test_hacking_runs_once_when_the_target_flake8_is_the_hook(self):
        self.commit({"nova/a.py": '"""A."""\n# hacking-error\n'})
        outcome = self.run_at()
        self.assertIn("failed: hacking (nova/a.py)", outcome.note)
        (self.root / "pins" / "fake.txt").write_text("six==1.0\n" + HACKING_PINS)
        outcome = self.run_at()
        self.assertEqual(0, outcome.failed)
        self.assertIn("hacking 8.0.0: the flake8 run (same versions)", outcome.note)
        self.assertEqual(1, len(self.hook_calls("flake8")))

    def test_a_tool_that_will_not_install_is_a_failed_outcome(self):
        def broken(ctx, name):
            raise util.HarnessError("venv install failed: pip said no")
        self.patch(tools, "tool_venv", broken)
        self.commit({"nova/a.py": '"""A."""\n'})
        outcome = self.run_at()
        self.assertEqual((1, "fake pep8 job"), (outcome.failed, outcome.name))
        self.assertIn("pip said no", outcome.note)


class MypyHookTest(Pep8Case):
    """31.x and 32.x list mypy as a hook: not at every commit, once per
    release in the mypy step, with the hook's args on the files it
    selects."""

    config = {"repos": [
        {"repo": MIRRORS_MYPY, "rev": "v1.15.0", "hooks": [
            {"id": "mypy", "additional_dependencies": ["types-paramiko"],
             "files": "(?x)(\n  nova/compute/manager.py\n  | nova/pci\n)\n"}]}]}

    def test_not_at_a_commit(self):
        self.commit({"nova/compute/manager.py": "x = 1\n"})
        outcome = self.run_at()
        self.assertEqual((0, 0), (outcome.passed, outcome.failed))
        self.assertIn("mypy: once per release", outcome.note)
        self.assertEqual([], self.hook_calls("mypy"))

    def test_the_step_runs_the_hook_on_its_files(self):
        self.commit({"nova/compute/manager.py": "x = 1\n", "nova/pci/a.py": "y = 1\n",
                     "nova/pci/README.rst": "pci\n", "nova/compute/api.py": "z = 1\n"})
        (self.tree / "tox.ini").write_text(TOX.replace(
            "commands =\n  mypy\n", f"commands =\n  {mypy_run.MYPY_HOOK}\n"))
        self.commit({})
        outcome = mypy_run.run_mypy(self.ctx, self.target, self.tree)
        self.assertEqual(1, outcome.passed, outcome)
        self.assertIn("mypy 1.15.0, the .pre-commit-config.yaml hook v1.15.0, 2 files",
                      outcome.name)
        [(args, cwd)] = self.hook_calls("mypy")
        self.assertEqual(str(self.tree), cwd)
        self.assertEqual(["--cache-dir", str(self.ctx.results("fake") / "mypy-cache"),
                          "--ignore-missing-imports", "--scripts-are-modules",
                          "nova/compute/manager.py", "nova/pci/a.py"], args)


class MypyToxTest(Pep8Case):
    """33.x and 34.0.0: ``mypy`` of [testenv:mypy] with the tree's config."""

    def test_mypy_errors_fail_with_their_lines(self):
        self.commit({"nova/a.py": "x: int = 'no'  # type-error\n"})
        outcome = mypy_run.run_mypy(self.ctx, self.target, self.tree)
        self.assertEqual(1, outcome.failed)
        self.assertIn("tox.ini [testenv:mypy]", outcome.name)
        self.assertIn("nova/a.py:1: mypy found # type-error", self.log.getvalue())
        [(args, _)] = self.hook_calls("mypy")
        self.assertEqual(["--cache-dir", str(self.ctx.results("fake") / "mypy-cache")], args)
        self.assertEqual("", util.git(self.tree, "status", "--porcelain"))

    def test_clean(self):
        self.assertEqual(1, mypy_run.run_mypy(self.ctx, self.target, self.tree).passed)

    def test_a_dependency_the_pins_lack(self):
        (self.tree / "tox.ini").write_text(TOX.replace("  types-paramiko\n",
                                                       "  types-paramiko\n  types-six\n"))
        outcome = mypy_run.run_mypy(self.ctx, self.target, self.tree)
        self.assertEqual(1, outcome.failed)
        self.assertIn("types-six, which pep8-fake.txt does not pin", outcome.note)

    def test_another_command(self):
        (self.tree / "tox.ini").write_text(TOX.replace("commands =\n  mypy\n",
                                                       "commands =\n  mypy --strict\n"))
        outcome = mypy_run.run_mypy(self.ctx, self.target, self.tree)
        self.assertEqual(1, outcome.failed)
        self.assertIn("mypy --strict", outcome.note)


class DriftTest(Pep8Case):
    """What the tree's config says and the declarations (REPOS, the pins)
    do not: the check fails, naming the difference."""

    def problems(self, config):
        return pep8_plan.plan(self.ctx, self.target, config).problems

    def edited(self, url, **changes):
        config = json.loads(json.dumps(CONFIG))
        repo = next(r for r in config["repos"] if r["repo"] == url)
        hooks = changes.pop("hooks", None)
        repo.update(changes)
        if hooks is not None:
            repo["hooks"] = hooks
        return config

    def test_declared_kinds(self):
        """The declared hooks run in the kinds HOOK_KINDS names, each kind
        by at least one."""
        kinds = {hook.kind for repo in pep8_plan.REPOS.values() for hook in repo.hooks.values()}
        self.assertEqual(set(pep8_plan.HOOK_KINDS), kinds)

    def test_the_config_as_declared(self):
        job = pep8_plan.plan(self.ctx, self.target, CONFIG)
        self.assertEqual([], job.problems)
        self.assertEqual(["trailing-whitespace", "mixed-line-ending", "check-added-large-files",
                          "check-docstring-first", "remove-tabs", "autopep8", "hacking",
                          "codespell", "sphinx-lint"], [h.id for h in job.hooks])
        mixed = job.hooks[1].hook
        self.assertEqual((("--fix", "lf"), r".*\.(svg)$", ("text",)),
                         (mixed.args, mixed.exclude, mixed.types))
        self.assertEqual(("hacking-8.0.0", None), (job.hooks[6].venv, job.hooks[4].venv))

    def test_a_rev_not_declared(self):
        self.assertEqual([f"repo {AUTOPEP8}: rev v2.4.0 is not declared (declared: v2.3.1, "
                          "v2.3.2)"], self.problems(self.edited(AUTOPEP8, rev="v2.4.0")))

    def test_a_repo_or_hook_not_declared(self):
        config = self.edited(PRE_COMMIT_HOOKS, hooks=[{"id": "end-of-file-fixer"},
                                                      {"id": "check-byte-order-marker"}])
        config["repos"].append({"repo": "https://github.com/psf/black", "rev": "1.0",
                                "hooks": [{"id": "black"}]})
        self.assertEqual([f"repo {PRE_COMMIT_HOOKS} v6.0.0: hook 'end-of-file-fixer' is not "
                          "declared",
                          # (gone in v6.0.0: pre-commit would fail it)
                          f"repo {PRE_COMMIT_HOOKS} v6.0.0: hook 'check-byte-order-marker' is "
                          "not declared",
                          "repo https://github.com/psf/black (1.0) is not declared in "
                          "novaseries/pep8job/plan.py REPOS"], self.problems(config))

    def test_keys_not_handled(self):
        config = self.edited(CODESPELL, hooks=[{"id": "codespell", "stages": ["manual"]}])
        config["default_stages"] = ["pre-push"]
        self.assertEqual([".pre-commit-config.yaml: top-level key 'default_stages' is not "
                          "handled here",
                          "hook codespell: key 'stages' is not handled here"],
                         self.problems(config))

    def test_pins_behind_the_config(self):
        (self.root / "pins" / "pep8-fake.txt").write_text(
            PEP8_PINS.replace("autopep8==2.3.2", "autopep8==2.3.1"))
        self.assertEqual(["hook autopep8: pep8-fake.txt pins autopep8 2.3.1, the config's rev "
                          "is 2.3.2"], self.problems(CONFIG))
        (self.root / "pins" / "hacking-8.0.0.txt").unlink()
        self.assertIn("hook hacking: pins file hacking-8.0.0.txt is missing",
                      self.problems(CONFIG))

    def test_additional_dependencies(self):
        # without additional_dependencies: [] the hacking hook installs
        # hacking[pep257], which its pins do not have
        config = self.edited(HACKING, hooks=[{"id": "hacking"}])
        self.assertEqual(["hook hacking: additional dependency '.[pep257]' is not in "
                          "hacking-8.0.0.txt"], self.problems(config))
        config = {"repos": [{"repo": MIRRORS_MYPY, "rev": "v1.15.0", "hooks": [
            {"id": "mypy", "additional_dependencies": ["types-paramiko", "types-six"]}]}]}
        self.assertEqual(["hook mypy: additional dependency 'types-six' is not in "
                          "pep8-fake.txt"], self.problems(config))

    def test_the_check_fails_on_drift(self):
        self.config = self.edited(AUTOPEP8, rev="v2.4.0")
        self.commit({"nova/a.py": '"""A."""\n'})
        outcome = self.run_at()
        self.assertEqual((0, 1), (outcome.passed, outcome.failed))
        self.assertIn("config drift: repo https://github.com/hhatto/autopep8: rev v2.4.0",
                      outcome.note)
        self.assertEqual([], calls(self.venvs["pep8-fake"]))

    def test_a_pep8_command_not_run_here(self):
        (self.tree / "tox.ini").write_text(TOX.replace(
            "  {[testenv:mypy]commands}\n", "  {[testenv:mypy]commands}\n  bash tools/x.sh\n"))
        self.commit({"nova/a.py": '"""A."""\n'})
        outcome = self.run_at()
        self.assertIn("tox.ini [testenv:pep8] runs 'bash tools/x.sh', which the harness does "
                      "not", outcome.note)


class SelectedTest(unittest.TestCase):
    """pre-commit's filters: top-level and hook files/exclude (searched
    regexes), types (all), types_or (any), exclude_types (none)."""

    def test_filters(self):
        top = pep8_plan.Plan(files="", exclude="^vendor/")
        hook = pep8_plan.Hook("x", files="^nova/", exclude=r"_states\.py$", types=("text",),
                              types_or=("python", "pyi"), exclude_types=("executable",))
        py = ("file", "text", "python", "non-executable")
        self.assertTrue(pep8_plan.selected("nova/a.py", py, top, hook))
        self.assertFalse(pep8_plan.selected("doc/a.py", py, top, hook))
        self.assertFalse(pep8_plan.selected("nova/ironic_states.py", py, top, hook))
        self.assertFalse(pep8_plan.selected("nova/a.rst", ("file", "text", "rst"), top, hook))
        self.assertFalse(pep8_plan.selected("nova/a.py", ("file", "python"), top, hook))
        self.assertFalse(pep8_plan.selected("nova/a.py", py + ("executable",), top, hook))
        self.assertFalse(pep8_plan.selected("vendor/nova/a.py", py,
                                            pep8_plan.Plan(exclude="^vendor/"),
                                            pep8_plan.Hook("x")))


class LegacyTest(helpers.ProjectTestCase):
    """pike (no pre-commit): tox -e pep8's JSON checks of doc/, its
    flake8 being flake8_run.run_flake8's."""

    def setUp(self):
        super().setUp()
        self.tree = self.tmp / "tree"
        (self.tree / "doc").mkdir(parents=True)
        util.git(self.tree, "init", "-q")
        commands = "\n  ".join(legacy.LEGACY_PEP8)
        self.tox = f"[testenv:pep8]\ncommands =\n  {commands}\n  # a comment\n"
        helpers.commit(self.tree, {"tox.ini": self.tox}, "base")
        util.git(self.tree, "tag", "base")
        self.venv = make_venv(self.tmp / "venv", tools=())

    def run_with(self, files):
        helpers.commit(self.tree, files, "change")
        [outcome] = pep8job.run(self.ctx, self.target, self.tree, self.venv, label="pike")
        return outcome

    def test_clean_json(self):
        outcome = self.run_with({"doc/api_samples/a.json": '{"a": 1}\n',
                                 "nova/a.py": "x = 1\n"})
        self.assertEqual((2, 0), (outcome.passed, outcome.failed))

    def test_carriage_return_and_bad_json(self):
        outcome = self.run_with({"doc/api_samples/a.json": '{"a": 1}\r\n',
                                 "doc/b.json": '{"a": }\n', "c.json": "{\n"})
        self.assertEqual((0, 2), (outcome.passed, outcome.failed))
        self.assertEqual("carriage returns: doc/api_samples/a.json; not JSON: doc/b.json",
                         outcome.note)
        log = self.log.getvalue()
        self.assertIn("doc/api_samples/a.json:1: carriage return", log)
        self.assertIn("doc/b.json: python -m json.tool:", log)
        self.assertNotIn("c.json", log.replace("doc/", ""))

    def test_nothing_to_check(self):
        outcome = self.run_with({"nova/a.py": "x = 1\n"})
        self.assertEqual((0, 0), (outcome.passed, outcome.failed))
        self.assertIn("no JSON file under doc/", outcome.note)

    def test_a_pep8_env_not_declared(self):
        outcome = self.run_with({"tox.ini": self.tox + "  bash tools/more.sh\n"})
        self.assertEqual(1, outcome.failed)
        self.assertIn("config drift", outcome.note)


class CallSiteTest(unittest.TestCase):
    """testrun.test_tree runs the pep8 job's checks beside flake8, on the
    same files, and not when flake8 is off (another mode's run, mutate)."""

    def test_tree(self):
        tmp, tree, venv = pathlib.Path(tempfile.mkdtemp()), "tree", "venv"
        self.addCleanup(shutil.rmtree, tmp)
        ctx = util.Context(tmp, tmp / "build", tmp / "cache")
        target = mock.Mock(mode=None)
        target.name = "t"
        job = mock.Mock(return_value=[Outcome("t pep8 hooks", passed=3)])
        with mock.patch.object(selecting, "unit_filters", return_value=[]), \
                mock.patch.object(selecting, "functional_selections", return_value=([], [])), \
                mock.patch.object(venvs, "compile_tree"), \
                mock.patch.object(selecting, "test_modules", return_value=[]), \
                mock.patch.object(flake8_run, "run_flake8", return_value=Outcome("t flake8")), \
                mock.patch.object(pep8job, "run", job), mock.patch("novaseries.testrun.say"):
            outcomes = testrun.test_tree(ctx, target, tree, venv, rev="abc", label="t",
                                         touched=["nova/a.py"])
            job.assert_called_once_with(ctx, target, tree, venv, rev="abc", label="t",
                                        touched=["nova/a.py"])
            self.assertEqual(["t flake8", "t pep8 hooks"], [o.name for o in outcomes[-2:]])
            testrun.test_tree(ctx, target, tree, venv, rev="abc", label="t", flake8=False,
                              touched=["nova/a.py"])
            self.assertEqual(1, job.call_count)


def _real_venv(test, name):
    """The harness's tool venv ``build/venvs/NAME``, held for the rest of
    ``test`` (its build lock, so that no harness run rebuilds it
    meanwhile), or None when it is not made or is being made."""
    venv = helpers.REPO / "build" / "venvs" / name
    if not (venv / venv_build.RECIPE_MARKER).is_file():
        return None
    handle = open(venv.parent / f"{name}.lock", "a+")
    test.addCleanup(handle.close)
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return None
    return venv if (venv / venv_build.RECIPE_MARKER).is_file() else None


def _committed(tree, names, rev="base"):
    """A temporary copy of ``names`` as committed at ``rev`` in ``tree``
    (git's objects: a tree the harness is preparing meanwhile is never
    read half-written), or None when ``tree`` has no such commit yet."""
    copy = pathlib.Path(tempfile.mkdtemp(prefix="novaseries-committed-"))
    for name in names:
        proc = util.git(tree, "show", f"{rev}:{name}", check=False)
        if proc.returncode:
            shutil.rmtree(copy)
            return None
        (copy / name).write_text(proc.stdout)
    return copy


class RealToolsTest(helpers.ProjectTestCase):
    """The real tools (``build/venvs/pep8-master``, made by the harness
    from pins/pep8-master.txt) on planted errors; skipped where that venv
    has not been made (tests use no network)."""

    CONFIG_TEXT = (
        "repos:\n"
        f"  - repo: {PRE_COMMIT_HOOKS}\n    rev: v6.0.0\n    hooks:\n"
        "      - id: trailing-whitespace\n      - id: check-docstring-first\n"
        f"  - repo: {AUTOPEP8}\n    rev: v2.3.2\n    hooks:\n"
        "      - id: autopep8\n        files: '^.*\\.py$'\n"
        f"  - repo: {CODESPELL}\n    rev: v2.4.1\n    hooks:\n      - id: codespell\n")

    def setUp(self):
        super().setUp()
        self.venv = _real_venv(self, "pep8-master")
        if self.venv is None:
            self.skipTest("build/venvs/pep8-master not made yet (the harness makes it in "
                          "its first pep8 check)")
        shutil.copy(helpers.REPO / "pins" / "pep8-master.txt",
                    self.root / "pins" / "pep8-fake.txt")
        patcher = mock.patch.object(tools, "tool_venv", lambda ctx, name: self.venv)
        patcher.start()
        self.addCleanup(patcher.stop)
        self.tree = self.tmp / "tree"
        self.tree.mkdir()
        util.git(self.tree, "init", "-q")
        helpers.commit(self.tree, {
            ".pre-commit-config.yaml": self.CONFIG_TEXT,
            "pyproject.toml": "[tool.autopep8]\naggressive = 3\nin-place = true\n"
                              "[tool.mypy]\nfiles = ['nova/typed.py']\n",
            "tox.ini": "[testenv:mypy]\ndeps =\n  mypy\ncommands =\n  mypy\n",
            "nova/__init__.py": "", "nova/typed.py": "def f() -> int:\n    return 1\n"},
            "base")
        util.git(self.tree, "tag", "base")
        self.ctx = util.Context.create(self.root, self.tmp / "build", self.cache)

    def failed_hooks(self, files):
        helpers.commit(self.tree, files, "change")
        [outcome] = pep8job.run(self.ctx, self.target, self.tree, None, label="real")
        self.assertEqual("", util.git(self.tree, "status", "--porcelain"))
        return outcome.note if outcome.failed else ""

    def test_a_clean_file_passes(self):
        self.assertEqual("", self.failed_hooks({"nova/clean.py": '"""Clean."""\n\nx = 1\n'}))

    def test_trailing_whitespace(self):
        # (in a .py file autopep8 would fail too)
        self.assertEqual("failed: trailing-whitespace (doc/a.rst)",
                         self.failed_hooks({"doc/a.rst": "The driver. \n"}))

    def test_autopep8_would_change_a_line(self):
        self.assertEqual("failed: autopep8 (nova/a.py)",
                         self.failed_hooks({"nova/a.py": '"""A."""\n\nx=1\n'}))
        self.assertIn("nova/a.py:3: autopep8 changes 'x=1\\n'", self.log.getvalue())

    def test_codespell_typo(self):
        self.assertEqual("failed: codespell (doc/a.rst)",
                         self.failed_hooks({"doc/a.rst": "Fix teh driver.\n"}))
        self.assertIn("doc/a.rst:1: teh ==> the", self.log.getvalue())

    def test_docstring_after_code(self):
        self.assertEqual("failed: check-docstring-first (nova/a.py)",
                         self.failed_hooks({"nova/a.py": 'x = 1\n"""A."""\n'}))

    def test_mypy(self):
        self.assertEqual(1, mypy_run.run_mypy(self.ctx, self.target, self.tree).passed)
        helpers.commit(self.tree, {"nova/typed.py": "def f() -> int:\n    return 'one'\n"},
                       "wrong")
        outcome = mypy_run.run_mypy(self.ctx, self.target, self.tree)
        self.assertEqual(1, outcome.failed)
        self.assertIn("nova/typed.py:2:", self.log.getvalue())


class PreparedTreesTest(unittest.TestCase):
    """The declarations (REPOS, the pins files) against the config of each
    release's prepared tree (as committed at ``base``): what CI checks at
    every run, here without a run; skipped for a release whose tree or
    tool venv the harness has not made yet."""

    TREES = {"master": "pep8-master", "2026.1": "pep8-2026.1", "2025.2": "pep8-2025.2",
             "2025.1": "pep8-2025.1"}

    def test_declarations_hold_for_the_prepared_trees(self):
        ctx = util.Context.create(helpers.REPO)
        checked = []
        for name, venv_name in self.TREES.items():
            venv = _real_venv(self, venv_name)
            copy = ctx.tree(name).is_dir() and venv and _committed(
                ctx.tree(name), [tools.CONFIG, "tox.ini"])
            if not copy:
                continue
            self.addCleanup(shutil.rmtree, copy)
            with self.subTest(release=name):
                target = mock.Mock(venv=name, release=name)
                config, _ = tools.probe(venv, copy, [])
                self.assertEqual([], pep8_plan.plan(ctx, target, config).problems)
                self.assertEqual([], pep8_plan.tox_problems(copy))
                checked.append(name)
        if not checked:
            self.skipTest("no release's tree and tool venv made yet")

    def test_pike_pep8_is_the_declared_one(self):
        tree = util.Context.create(helpers.REPO).tree("pike")
        copy = tree.is_dir() and _committed(tree, ["tox.ini"])
        if not copy:
            self.skipTest("pike's tree not prepared yet")
        self.addCleanup(shutil.rmtree, copy)
        self.assertEqual("", util.git(tree, "ls-tree", "base", tools.CONFIG))
        self.assertEqual([" ".join(c.split()) for c in legacy.LEGACY_PEP8],
                         tools.tox_commands(copy, "pep8"))


if __name__ == "__main__":
    unittest.main()
