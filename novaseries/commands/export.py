"""``novaseries export TARGET``: write the tree's commits since ``base`` to
the target's patches folder and its ``series`` (:func:`novaseries.export.
export`).

The submitter's options (``--bug``, ``--signoff``, ``--trailer``,
``--author``) write to a submission copy, ``build/export/TARGET`` (or
``--out``): real bug numbers, trailers and identities never go into the
series kept in patches/.
"""

from novaseries import export, release_changes, targets as targets_mod
from novaseries.commands import common
from novaseries.release_changes import not_stacked_on
from novaseries.util import HarnessError, say

HELP = "write the tree's commits since base to patches/TARGET and its series"


def add_arguments(parser, ctx):
    common.add(parser, common.TARGET, common.TREE,
               (("--out",), dict(help="folder to write (default: the target's patches "
                                 "folder)")),
               (("--bug",), dict(action="append", default=[], metavar="NAME=NUMBER",
                                 help="replace a bug placeholder, e.g. main=1234567 "
                                 "(names: targets.toml [bugs])")),
               (("--signoff",), dict(action="store_true", help="add Signed-off-by: <your "
                                     "git identity> to each exported patch")),
               (("--trailer",), dict(action="append", default=[], metavar="'KEY: VALUE'",
                                     help="add a trailer to each exported patch")),
               (("--author",), dict(metavar="'NAME <EMAIL>'",
                                    help="the author of each exported patch (patches/ "
                                    "keeps the placeholder author)")))


def run(ctx, args):
    target = common.target(ctx, args)
    missing = release_changes.requirements_missing(ctx, target)
    if missing:
        raise HarnessError(
            not_stacked_on(f"target {target.name}: {target.patches}", missing, "the target")
            + "; refusing to export",
            "targets.toml [changes] declares what each change requires; stack the "
            "target on it (its change's `on`, or stack = true).")
    known = targets_mod.placeholders(ctx)
    bugs = export.parse_bugs(args.bug, known)
    author = export.parse_author(args.author) if args.author is not None else None
    out = args.out
    if out is None and (bugs or args.signoff or args.trailer or author):
        # Real bug numbers, the submitter's trailers and identity are for
        # a submission, never for the series kept in patches/.
        out = ctx.build / "export" / target.name
        say(f"export: --bug/--signoff/--trailer/--author given: writing to {out} "
            f"(patches/{target.name} is left as it is; --out to choose)")
    export.export(target, args.tree or ctx.tree(target.name), out, bugs,
                  args.signoff, args.trailer, author=author, placeholders_known=known)
    return 0
