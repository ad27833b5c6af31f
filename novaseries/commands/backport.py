"""``novaseries backport TARGET --upstream PATH``: a stable target's tree as
the commits to propose on Gerrit (:func:`novaseries.backport.backport`):
its ``base..HEAD`` with each commit's ``(cherry picked from commit ...)``
lines, looked up by Change-Id in a clone of upstream Nova, written as a new
branch of the tree.  Prints each commit and the lines it got, the branch
and the command that proposes it."""

from novaseries import backport
from novaseries.commands import common

HELP = "a stable tree's commits with their cherry-pick lines, as a branch for Gerrit"
EPILOG = """\
Each commit of the target's own folder (those of its below folders must
have merged on the Gerrit branch already, and stay as they are) is
looked up by its Change-Id on master and on
every newer branch above the target's (targets.toml [gerrit_branches]) and
gets one "(cherry picked from commit <sha>)" line per branch, master's
first, after its footer; trees, authors and dates are kept.  A commit
whose Change-Id no master folder of patches/ has (stable-only) gets none.
Refused, nothing written: a change not merged on a branch above yet, or
merged there twice, or merged with other added/removed lines than our
folder of that branch's release holds (export the merged version first);
a below folder's change not merged on the Gerrit branch; master and
end-of-life releases.  The tree's branch
and HEAD are left as they are.  An existing --branch is never replaced:
refused, unless it already holds exactly these commits."""


def add_arguments(parser, ctx):
    common.add(parser, common.TARGET, common.TREE,
               (("--upstream",), dict(required=True, metavar="PATH",
                                      help="a clone of upstream Nova "
                                      "(https://opendev.org/openstack/nova)")),
               (("--remote",), dict(default="origin", metavar="NAME",
                                    help="its remote to read the branches of (default: "
                                    "origin; a branch it lacks is read locally)")),
               (("--branch",), dict(metavar="NAME",
                                    help="the branch to write in the tree (default: "
                                    "backport/<Gerrit branch, / as ->, e.g. "
                                    "backport/stable-2026.1)")))


def run(ctx, args):
    target = common.target(ctx, args)
    tree = args.tree or ctx.tree(target.name)
    result = backport.backport(ctx, target, tree, args.upstream, args.remote, args.branch)
    for old, new, lines in result.commits:
        if lines is None:
            got = "stable-only (its Change-Id is in no master folder): no cherry-pick line"
        else:
            got = ", ".join(f"cherry picked from {branch} {sha[:12]}" for branch, sha in lines)
        print(f"{old.sha[:12]} -> {new[:12]} {old.subject}: {got}")
    state = "already held these commits, unchanged" if result.unchanged else "written"
    print(f"branch {result.branch} of {result.tree}: {state} ({len(result.commits)} commits "
          f"for {result.gerrit_branch}; the tree's branch and HEAD untouched)")
    # the branch stands on the sdist's base commit, which is not upstream
    # history: its commits go onto the Gerrit branch in the upstream clone
    print(f"next: git -C {args.upstream} checkout -b {result.branch} "
          f"{args.remote}/{result.gerrit_branch} && "
          f"git -C {result.tree} format-patch --stdout {result.start}..{result.branch} | "
          f"git -C {args.upstream} am -3 && "
          f"git -C {args.upstream} review {result.gerrit_branch}", flush=True)
    return 0
