"""``novaseries quilt RELEASE --out DIR``: the release's packaged stack
(:func:`novaseries.targets.packaged_stack`) as one quilt series with DEP-3
headers, for ``debian/patches`` or an RPM spec's ``PatchN:`` lines
(:mod:`novaseries.quilt`); ``--check`` proves it on the release's sdist
before it is written."""

from novaseries import export, quilt, targets as targets_mod
from novaseries.commands import common

HELP = "a release's packaged stack as one quilt series with DEP-3 headers (debian/patches, RPM)"
EPILOG = """\
Writes DIR/series and NNNN-<folder>-<file>.patch per patch: NNNN counts the
whole stack, <folder> is its folder under patches/ without the release
(patches/<release> itself: teardown), e.g. 0014-rebuild-0001-....patch.
Each: DEP-3 headers (Description: subject, message, Change-Id; Author; Bug;
Forwarded; Last-Update), "---", then the folder's diffstat and diff byte
for byte.  DIR must be missing or empty: written beside it, then renamed.

--check (the sdist is fetched and sha256-checked into the sdist cache):
the series applied with patch -p1 --fuzz=0 --no-backup-if-mismatch
to the sdist, and a 3.0 (quilt) package of it built and extracted by
dpkg-source (if installed), must give the tree git am of the folders gives,
else nothing is written.  dpkg-source leaves out empty files (patch -E): a
warning names them."""


def add_arguments(parser, ctx):
    common.add(parser,
               (("release",), dict(help="master, 2026.1, 2025.2, 2025.1 or pike (the "
                                   "releases of targets.toml)")),
               (("--out",), dict(required=True, metavar="DIR",
                                 help="the folder to write (missing or empty)")),
               (("--bug",), dict(action="append", default=[], metavar="NAME=NUMBER",
                                 help="replace a bug placeholder, as export does, e.g. "
                                 "main=1234567 (names: targets.toml [bugs])")),
               (("--forwarded",), dict(action="append", default=[],
                                       metavar="CHANGE-ID=URL",
                                       help="Forwarded: URL (its Gerrit review) for the "
                                       "patch of that Change-Id (default: Forwarded: no)")),
               (("--check",), dict(action="store_true",
                                   help="prove the series on the release's sdist first "
                                   "(below)")))


def run(ctx, args):
    stack = targets_mod.packaged_stack(ctx, args.release)
    known = targets_mod.placeholders(ctx)
    bugs = export.parse_bugs(args.bug, known)
    forwarded = quilt.parse_forwarded(args.forwarded)
    entries, lines = quilt.quilt(ctx, stack, args.out, bugs, forwarded, known,
                                 verify=args.check)
    for line in lines:
        print(line)
    folders = ", ".join(str(f.relative_to(ctx.root)) if f.is_relative_to(ctx.root) else str(f)
                        for f in stack.folders)
    print(f"{args.out}: {len(entries)} patches for nova {stack.target.version} "
          f"({args.release}): {folders}", flush=True)
    return 0
