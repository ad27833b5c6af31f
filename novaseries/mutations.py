"""Mutations: small, declared changes to a Nova tree that a good test
suite must not notice (or must notice), applied to a scratch copy only.

The one mutation so far is issue 39's yardstick, ``extra-read``: one more
read of the node at the start of the ironic driver's ``destroy()`` and of
each iteration of its deploy wait (``_wait_for_active``) and tear-down
wait (``_wait_for_teardown``'s ``_poll`` in the series,
``_unprovision``'s ``_wait_for_provision_state`` in 34.0.0 itself).  The
driver's behaviour is unchanged (the read's answer is thrown away; an error
is swallowed), so a functional test that fails with it depends on how many
times the driver reads Ironic, not on what the driver does.

A mutation is data (:data:`MUTATIONS`): the file, the functions to change
(by qualified name, with alternatives where releases differ) and the code
put at the start of each function's body.  :func:`apply` edits the file in
place and never commits; ``novaseries mutate`` applies it in a scratch
worktree (:mod:`novaseries.commands.mutate`).
"""

import ast
import dataclasses
import pathlib
import textwrap

from novaseries.util import HarnessError


@dataclasses.dataclass(frozen=True)
class Mutation:
    """One declared mutation.

    :param name: what ``novaseries mutate --mutation`` calls it.
    :param description: one line for ``--help`` and the report.
    :param path: the file it edits, relative to the tree's root.
    :param anchors: one tuple per place to change, each of qualified
        function names (``Class.method`` or ``Class.method.inner``), the
        first that exists in the file being used (releases name the same
        loop differently).
    :param code: the statements put first in each anchor's body (after its
        docstring), unindented; they may use the names every anchor has in
        scope (``self``, ``instance``).
    """

    name: str
    description: str
    path: str
    anchors: tuple
    code: str


#: The declared mutations, by name.
MUTATIONS = {m.name: m for m in (
    Mutation(
        name="extra-read",
        description=("one more read of the node (nodes(instance_id=...)) at the start of "
                     "destroy() and of each iteration of the ironic driver's deploy and "
                     "tear-down waits (issue 39's yardstick)"),
        path="nova/virt/ironic/driver.py",
        anchors=(("IronicDriver.destroy",),
                 ("IronicDriver._wait_for_active",),
                 ("IronicDriver._wait_for_teardown._poll",
                  "IronicDriver._unprovision._wait_for_provision_state")),
        code=textwrap.dedent("""\
            try:  # novaseries mutation extra-read: one more read of the node
                list(self.ironic_connection.nodes(instance_id=instance.uuid))
            except Exception:
                pass
            """)),
)}


def get(name):
    """The mutation called ``name``.

    :raises HarnessError: no such mutation (the message lists them).
    """
    try:
        return MUTATIONS[name]
    except KeyError:
        raise HarnessError(f"unknown mutation {name!r} (known: {', '.join(MUTATIONS)})") from None


def _find(module, qualname):
    """The function node ``qualname`` (``A.b.c``) names in ``module``
    (an ``ast.Module``), or None."""
    scope = module.body
    found = None
    for part in qualname.split("."):
        found = next((node for node in scope
                      if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                      and node.name == part), None)
        if found is None:
            return None
        scope = found.body
    return found if isinstance(found, (ast.FunctionDef, ast.AsyncFunctionDef)) else None


def _first_statement(function):
    """The first statement of ``function``'s body after its docstring."""
    body = function.body
    if (len(body) > 1 and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)):
        return body[1]
    return body[0]


def apply(tree, mutation):
    """Edit ``mutation.path`` in ``tree`` (a checkout) in place: put
    ``mutation.code`` first in the body of each anchor (after its
    docstring), indented as that body.

    :returns: ``[(qualified name, line number in the edited file)]``, one
        per anchor, in file order.
    :raises HarnessError: the file is missing or does not parse, or an
        anchor has none of its names in the file (the message names the
        file and the names); the file is then left as it was.
    """
    path = pathlib.Path(tree, mutation.path)
    if not path.is_file():
        raise HarnessError(f"mutation {mutation.name}: {path} does not exist")
    text = path.read_text()
    try:
        module = ast.parse(text, filename=str(path))
    except SyntaxError as exc:
        raise HarnessError(f"mutation {mutation.name}: {path} does not parse: {exc}") from None
    places = []
    for names in mutation.anchors:
        found = next(((name, node) for name in names
                      if (node := _find(module, name)) is not None), None)
        if found is None:
            raise HarnessError(f"mutation {mutation.name}: {mutation.path} has none of "
                               f"{', '.join(names)}")
        name, function = found
        first = _first_statement(function)
        if first.lineno == function.lineno:
            raise HarnessError(f"mutation {mutation.name}: {mutation.path}: {name} has its "
                               "body on its def line")
        places.append((first.lineno, first.col_offset, name))
    lines = text.splitlines(keepends=True)
    for lineno, column, _ in sorted(places, reverse=True):
        lines[lineno - 1:lineno - 1] = [textwrap.indent(mutation.code, " " * column)]
    path.write_text("".join(lines))
    inserted = mutation.code.count("\n")
    done = []
    for number, (lineno, _, name) in enumerate(sorted(places)):
        done.append((name, lineno + number * inserted))
    return done
