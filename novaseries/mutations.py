"""Mutations: small, declared changes to a Nova tree that a good test
suite must not notice (or must notice), applied to a scratch copy only.

The mutations measure whether the tests count reads: ``extra-read``, one more
read of the node at the start of the ironic driver's ``destroy()`` and of
each iteration of its deploy wait (``_wait_for_active``) and tear-down
wait (``_wait_for_teardown``'s ``_poll`` where the teardown series is
applied, ``_unprovision``'s ``_wait_for_provision_state`` in a tree
without it: 34.0.0 itself, the rebuild, unplug_vifs and node-leak
changes on their own).  The driver's behaviour is unchanged (the read's
answer is thrown away; an error is swallowed), so a functional test that
fails with it depends on how many times the driver reads Ironic, not on
what the driver does; and ``extra-get-node``, the same read made with
``get_node``.  The planted defects (:data:`PLANTED`) each remove a guard
of the series, which the tests (``novaseries mutate``) and the explorer
(``novaseries explore --mutation``) must notice.

A mutation is data (:data:`MUTATIONS`): the file, the functions to change
(by qualified name, with alternatives where releases differ) and the code
put at the start of each function's body; or texts to replace, each
found once.  :func:`apply` edits the file in
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
    :param requires: a function (qualified name) the file must define for
        the code to do anything (pike's driver has no
        ``ironic_connection``: the mutation's read would fail there and be
        swallowed, so every test would pass).
    :param replace: instead of ``anchors`` and ``code``: ``(old, new)``
        texts, each ``old`` found exactly once in the file and replaced
        (a planted defect: a guard of the series removed).
    """

    name: str
    description: str
    path: str
    anchors: tuple = ()
    code: str = ""
    requires: str = ""
    replace: tuple = ()


#: destroy() and the ironic driver's deploy and tear-down waits, as
#: :class:`Mutation` ``anchors``.
DRIVER_WAITS = (("IronicDriver.destroy",),
                ("IronicDriver._wait_for_active",),
                ("IronicDriver._wait_for_teardown._poll",
                 "IronicDriver._unprovision._wait_for_provision_state"))


def driver_read(name, description, read):
    """A :class:`Mutation` called ``name`` that puts one more read of the
    node, the statement ``read`` (its answer thrown away, an error
    swallowed), first in destroy() and in each iteration of the ironic
    driver's deploy and tear-down waits (:data:`DRIVER_WAITS`)."""
    return Mutation(
        name=name, description=description, path="nova/virt/ironic/driver.py",
        anchors=DRIVER_WAITS, requires="IronicDriver.ironic_connection",
        code=(f"try:  # novaseries mutation {name}: one more read of the node\n"
              f"    {read}\n"
              "except Exception:\n"
              "    pass\n"))


#: Planted defects: each removes one guard of the series from the fixed
#: tree (``replace``), for the explorer to find (``novaseries explore
#: --mutation``).
PLANTED = (
    Mutation("leave-teardown-early",
             "destroy() returns at once when it finds the node deleting, also "
             "in a failed build's clean-up (which must wait for Ironic's "
             "tear-down, or end the build without a reschedule)",
             "nova/virt/ironic/driver.py",
             replace=(("            self._leave_teardown_to_ironic(instance, node, "
                       "outage)\n            return\n",
                       "            return\n"),)),
    Mutation("no-409-retry",
             "destroy() sends the tear-down request once: a 409 of a node "
             "Ironic's conductor locks for a moment is not retried",
             "nova/virt/ironic/driver.py",
             replace=(("        for retry in range(retries + 1):\n",
                       "        for retry in range(1):\n"),)),
    Mutation("no-reschedule-guard",
             "the compute manager's guards of a failed build the user is "
             "deleting removed: its reschedule and its ERROR saves no longer "
             "expect a build's task state",
             "nova/compute/manager.py",
             replace=(("                instance.save(expected_task_state="
                       "BUILD_TASK_STATES)\n",
                       "                instance.save()\n"),
                      ("                self._set_instance_obj_error_state(\n"
                       "                    instance, clean_task_state=True,\n"
                       "                    expected_task_state=BUILD_TASK_STATES)\n",
                       "                self._set_instance_obj_error_state(\n"
                       "                    instance, clean_task_state=True)\n"),
                      ("            self._set_instance_obj_error_state(\n"
                       "                instance, clean_task_state=True,\n"
                       "                expected_task_state=BUILD_TASK_STATES)\n",
                       "            self._set_instance_obj_error_state(\n"
                       "                instance, clean_task_state=True)\n"))),
)

#: The declared mutations, by name.
MUTATIONS = {m.name: m for m in (
    driver_read("extra-read",
                "one more read of the node (nodes(instance_id=...)) at the start of "
                "destroy() and of each iteration of the ironic driver's deploy and "
                "tear-down waits (a test that fails with it counts reads)",
                "list(self.ironic_connection.nodes(instance_id=instance.uuid))"),
    driver_read("extra-get-node",
                "extra-read with get_node(instance.node) as the read: a test that fails "
                "with it and not with extra-read counts the kinds of calls per poll",
                "self.ironic_connection.get_node(instance.node)"),
    *PLANTED,
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
    """The first statement of ``function``'s body after its docstring, or
    None when the docstring is all the body holds."""
    body = function.body
    if (isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)):
        return body[1] if len(body) > 1 else None
    return body[0]


def _place(mutation, name, function, lines):
    """``(line number, indentation)`` where ``mutation.code`` goes in
    ``function`` (``name``): the line its first statement after the
    docstring starts on (a decorated statement: its first decorator's).

    :raises HarnessError: there is no such statement, or something other
        than indentation comes before it on its line (a body on the
        ``def`` line, ``\"\"\"doc\"\"\"; x = 1``).
    """
    first = _first_statement(function)
    if first is None:
        raise HarnessError(f"mutation {mutation.name}: {mutation.path}: {name} has no "
                           "statement after its docstring")
    decorators = getattr(first, "decorator_list", [])
    lineno = min([first.lineno] + [d.lineno for d in decorators])
    line = lines[lineno - 1]
    column = len(line) - len(line.lstrip()) if decorators else first.col_offset
    if line[:column].strip() or (decorators and not line[column:].startswith("@")):
        raise HarnessError(f"mutation {mutation.name}: {mutation.path}:{lineno}: {name}'s "
                           "first statement does not start its line")
    return lineno, column


def apply(tree, mutation):
    """Edit ``mutation.path`` in ``tree`` (a checkout) in place: put
    ``mutation.code`` first in the body of each anchor (after its
    docstring), indented as that body.

    :returns: ``[(qualified name, line number in the edited file)]``, one
        per anchor, in file order.
    :raises HarnessError: the file is missing, does not parse or lacks
        ``mutation.requires``; anchors have none of their names in the file
        (the message names the file and every such anchor's names); an
        anchor's body has no place for the code (:func:`_place`); the
        edited text would not compile.  The file is then left as it was.
    """
    path = pathlib.Path(tree, mutation.path)
    if not path.is_file():
        raise HarnessError(f"mutation {mutation.name}: {path} does not exist")
    text = path.read_text()
    if mutation.replace:
        return _replace(mutation, path, text)
    try:
        module = ast.parse(text, filename=str(path))
    except SyntaxError as exc:
        raise HarnessError(f"mutation {mutation.name}: {path} does not parse: {exc}") from None
    if mutation.requires and _find(module, mutation.requires) is None:
        raise HarnessError(f"mutation {mutation.name}: {mutation.path} has no "
                           f"{mutation.requires}: the mutation would do nothing there")
    lines = text.splitlines(keepends=True)
    places, missing = [], []
    for names in mutation.anchors:
        found = next(((name, node) for name in names
                      if (node := _find(module, name)) is not None), None)
        if found is None:
            missing.append(" or ".join(names))
            continue
        places.append((*_place(mutation, *found, lines), found[0]))
    if missing:
        raise HarnessError(f"mutation {mutation.name}: {mutation.path} has no "
                           f"{'; no '.join(missing)}")
    for lineno, column, _ in sorted(places, reverse=True):
        lines[lineno - 1:lineno - 1] = [textwrap.indent(mutation.code, " " * column)]
    mutated = "".join(lines)
    try:  # compile(), not only parse: some errors only compiling finds (nonlocal)
        compile(mutated, str(path), "exec")
    except SyntaxError as exc:  # a shape _place did not foresee (tabs)
        raise HarnessError(f"mutation {mutation.name}: {mutation.path} would not compile "
                           f"once mutated ({exc}); left as it was") from None
    path.write_text(mutated)
    inserted = mutation.code.count("\n")
    return [(name, lineno + number * inserted)
            for number, (lineno, _, name) in enumerate(sorted(places))]


def _replace(mutation, path, text):
    """:func:`apply` for a mutation of ``replace`` pairs.

    :returns: ``[(the start of old, line number)]``, one per pair.
    :raises HarnessError: an ``old`` found other than once, or a text
        that would not compile (the file is left as it was).
    """
    places = []
    for old, new in mutation.replace:
        count = text.count(old)
        if count != 1:
            raise HarnessError(f"mutation {mutation.name}: {mutation.path} has "
                               f"{count} copies of {old.strip()[:60]!r}, not one")
        places.append((old.strip().splitlines()[0],
                       text[:text.index(old)].count("\n") + 1))
        text = text.replace(old, new)
    try:
        compile(text, str(path), "exec")
    except SyntaxError as exc:
        raise HarnessError(f"mutation {mutation.name}: {mutation.path} would not compile "
                           f"once mutated ({exc}); left as it was") from None
    path.write_text(text)
    return places
