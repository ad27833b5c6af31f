"""The package holds everything ``novaseries run`` needs: every folder of
Python code under ``novaseries/`` is a package that pyproject.toml lists,
so a built wheel has the scenario table and the player that ``run`` starts
in Nova's venv.  (Building a wheel here would need the
network for the build backend; ``pip install .`` into a clean venv
checks that by hand.)"""

import tomllib
import unittest

from novaseries.mainjob import trees
from tests import helpers


class PackageTest(unittest.TestCase):

    def test_every_code_folder_is_a_listed_package(self):
        config = tomllib.loads((helpers.REPO / "pyproject.toml").read_text())
        listed = set(config["tool"]["setuptools"]["packages"])
        root = helpers.REPO / "novaseries"
        folders = {p.parent for p in root.rglob("*.py") if "__pycache__" not in p.parts}
        wanted = {".".join(f.relative_to(helpers.REPO).parts) for f in folders}
        self.assertEqual(wanted, listed)
        for name in listed:
            self.assertTrue((helpers.REPO.joinpath(*name.split(".")) / "__init__.py").exists(),
                            name)

    def test_run_finds_its_player_inside_the_package(self):
        player = helpers.REPO.joinpath(*trees.PLAYER.split(".")).with_suffix(".py")
        self.assertTrue(player.is_file())
        self.assertEqual(helpers.REPO / "novaseries" / "nova_side" / "player", player.parent)
        table = helpers.REPO / "novaseries" / "scenarios" / "scenario_table.py"
        self.assertTrue(table.is_file())
