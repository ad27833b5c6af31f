"""``novaseries backport TARGET --upstream PATH --out DIR``: a stable
target's own folder as the patches to propose on Gerrit
(:func:`novaseries.backport.backport`): each with its ``(cherry picked
from commit ...)`` lines, looked up by Change-Id in a clone of upstream
Nova, and the real bug numbers.  Prints each patch and the lines it got,
and the command that proposes them."""

import shlex

from novaseries import backport
from novaseries import export
from novaseries import targets as targets_mod
from novaseries.commands import common

HELP = "a stable target's own patches with their cherry-pick lines, for Gerrit"
EPILOG = """\
Reads the target's own folder (not a tree). Each patch is looked up by
its Change-Id on master and on every newer branch above the target's
(targets.toml [gerrit_branches]) and gets one "(cherry picked from commit
<sha>)" line per branch, master's first, after its footer. A patch whose
Change-Id no master folder of patches/ has (stable-only) gets none.
Refused, nothing written: a bug placeholder --bug does not replace; a
change not merged on a branch above yet, or merged there twice, or merged
adding or removing other lines than our folder of that branch's release
(export the merged version first); a change of the target's below
folders not merged on its Gerrit branch as we hold it (propose that
folder first); master and end-of-life releases; an --out that is not
empty."""


def add_arguments(parser, ctx):
    common.add(parser, common.TARGET,
               (("--upstream",), dict(required=True, metavar="PATH",
                                      help="a clone of upstream Nova "
                                      "(https://opendev.org/openstack/nova)")),
               (("--out",), dict(required=True, metavar="DIR",
                                 help="the new folder (missing or empty) to write the "
                                 "patches and their series to")),
               (("--remote",), dict(default="origin", metavar="NAME",
                                    help="its remote to read the branches of (default: "
                                    "%(default)s; a branch it lacks is read locally)")),
               (("--bug",), dict(action="append", default=[], metavar="NAME=NUMBER",
                                 help="replace a bug placeholder, as export does, e.g. "
                                 "apiblip=1234567 (names: targets.toml [bugs])")))


def run(ctx, args):
    target = common.target(ctx, args)
    bugs = export.parse_bugs(args.bug, targets_mod.placeholders(ctx))
    result = backport.backport(ctx, target, args.upstream, args.out, args.remote, bugs)
    for patch, lines in result.patches:
        if lines is None:
            got = "stable-only (its Change-Id is in no master folder): no cherry-pick line"
        else:
            got = ", ".join(f"cherry picked from {branch} {sha[:12]}" for branch, sha in lines)
        print(f"{patch.name}: {got}")
    print(f"wrote {len(result.patches)} patches and their series to {result.out}, "
          f"for {result.gerrit_branch}")
    up = shlex.quote(str(args.upstream))
    names = " ".join(shlex.quote(str(result.out / patch.name)) for patch, _ in result.patches)
    print(f"next: git -C {up} checkout -b {shlex.quote(f'backport/{target.name}')} "
          f"{shlex.quote(result.ref)} && git -C {up} am -3 {names} && "
          f"git -C {up} review {shlex.quote(result.gerrit_branch)}", flush=True)
    return 0
