"""Run inside a pep8 tool venv (``build/venvs/pep8-<release>``, which has
PyYAML and identify), never by the harness's own Python: reads a request
``{"config": PATH, "files": [PATH, ...]}`` (JSON) on stdin and prints
``{"config": <the YAML file, parsed>, "tags": {PATH: [tag, ...]}}``: the
tree's ``.pre-commit-config.yaml`` as pre-commit reads it (a safe YAML
load) and each file's tags as pre-commit's ``types`` filters see them
(``identify.tags_from_path``).  Paths are relative to the working
directory (the tree).  :mod:`novaseries.pep8job` runs it as
``python -m novaseries.nova_side.pep8probe`` with the checkout on ``PYTHONPATH``.
"""

import json
import sys

import yaml
from identify import identify


def main():
    request = json.load(sys.stdin)
    with open(request["config"], encoding="utf-8") as handle:
        config = yaml.safe_load(handle)
    tags = {path: sorted(identify.tags_from_path(path)) for path in request["files"]}
    json.dump({"config": config, "tags": tags}, sys.stdout)


if __name__ == "__main__":
    main()
