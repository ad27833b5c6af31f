"""``prepare``: materialise a target's tree as git commits, reproducibly.

A tree is a git repository holding the pristine sdist as its first commit
(tag ``base``) and one commit per patch of the series on top.  The base
commit uses a fixed identity and date; patches are applied with ``git am``,
a fixed committer and ``--committer-date-is-author-date``.  So the commit
ids depend only on the sdist and the patch files, not on the machine.
"""

import contextlib
import fnmatch
import pathlib
import re
import shutil
import tempfile

from novaseries import sdist as sdist_mod
from novaseries.util import BASE_DATE, LOG, HarnessError, file_lock, git, say

#: The git tag of a tree's base commit, the pristine sdist.
BASE_TAG = "base"

#: Paths Nova's test runs create inside a tree; never committed or exported.
EXCLUDES = ("instances/", ".stestr/", "__pycache__/", "*.pyc")


def base_message(version):
    """Message of the base commit."""
    return f"Import nova {version} (pristine sdist)"


def am_in_progress(tree):
    """True if ``git am`` stopped in ``tree`` (its state dir exists)."""
    gitdir = pathlib.Path(git(tree, "rev-parse", "--absolute-git-dir"))
    return (gitdir / "rebase-apply").exists()


def _artefact(path):
    """True for files test runs leave behind: ``path`` (relative to the
    tree) matches :data:`EXCLUDES` as git's ``info/exclude`` would (a
    pattern without a slash matches a name at any depth)."""
    parts = path.split("/")
    for pattern in EXCLUDES:
        name = pattern.rstrip("/")
        if pattern.endswith("/"):
            # a directory: any leading directory of the path
            if any(fnmatch.fnmatch(p, name) for p in parts[:-1]):
                return True
        elif any(fnmatch.fnmatch(p, name) for p in parts):
            return True
    return False


def status(tree):
    """``git status --porcelain`` lines: uncommitted and untracked changes,
    leaving out test artefacts even in trees whose info/exclude lacks them."""
    out = git(tree, "status", "--porcelain", "--untracked-files=all")
    return [line for line in out.splitlines()
            if line and not (line.startswith("?? ") and _artefact(line[3:]))]


def series_commits(tree, head="HEAD"):
    """Commit ids of ``base..head``, oldest first."""
    out = git(tree, "rev-list", "--reverse", f"{BASE_TAG}..{head}")
    return out.split()


def check_tree(tree):
    """Raise HarnessError unless ``tree`` is a novaseries tree (tag base)."""
    tree = pathlib.Path(tree)
    if not (tree / ".git").exists():
        raise HarnessError(f"{tree} is not a prepared tree (run `novaseries prepare` first)")
    if git(tree, "rev-parse", "-q", "--verify", f"refs/tags/{BASE_TAG}^{{commit}}",
           check=False).returncode:
        raise HarnessError(f"{tree} has no `{BASE_TAG}` tag: not a tree made by novaseries "
                           "prepare, or one whose prepare was interrupted (then delete the folder "
                           "and prepare again)")


def create_base(target, dest, cache, downloader=sdist_mod.pip_download):
    """Fetch + verify the sdist, extract it at ``dest`` and commit it as ``base``."""
    sdist = sdist_mod.fetch(target, cache, downloader)
    sdist_mod.extract(sdist, dest)
    try:
        git(dest, "init", "-q", "--initial-branch=master")
        with open(pathlib.Path(dest) / ".git" / "info" / "exclude", "a") as handle:
            handle.write("# novaseries: test artefacts\n" + "\n".join(EXCLUDES) + "\n")
        git(dest, "add", "--all", "--force", ".")
        env = {"GIT_AUTHOR_DATE": BASE_DATE, "GIT_COMMITTER_DATE": BASE_DATE}
        git(dest, "commit", "-q", "--no-verify", "-m", base_message(target.version), env=env)
        git(dest, "tag", BASE_TAG)
    except BaseException:
        shutil.rmtree(dest, ignore_errors=True)
        raise
    say(f"tree: {dest}: {BASE_TAG} {git(dest, 'rev-parse', '--short', BASE_TAG)} = nova "
        f"{target.version} pristine")


def _hunk_header(patch, path, line):
    """The ``@@ -line,...`` header of the hunk of ``patch`` on ``path``."""
    in_file = False
    for text in pathlib.Path(patch).read_text(errors="replace").splitlines():
        if text.startswith("diff --git "):
            in_file = text.endswith(f" b/{path}") or f" a/{path} " in text
        elif in_file and re.match(rf"@@ -{line}[, ]", text):
            return text
    return None


def am_failure(tree, patches, output, where=None):
    """Build the HarnessError for a failed ``git am`` of ``patches`` in ``tree``.

    Names the patch (from git am's ``next`` counter), the file and the hunk
    (from ``error: patch failed: FILE:LINE``), and says how to go on.
    """
    gitdir = pathlib.Path(git(tree, "rev-parse", "--absolute-git-dir"))
    try:
        index = int((gitdir / "rebase-apply" / "next").read_text()) - 1
        patch = patches[index]
    except (OSError, ValueError, IndexError):
        patch = None
    files = re.findall(r"^error: patch failed: (.+):(\d+)$", output, re.M)
    other = re.findall(r"^error: (.+?): (does not exist in index|already exists in index|"
                       r"No such file or directory|patch does not apply)$", output, re.M)
    name = patch.name if patch else "(unknown patch)"
    if files:
        path, line = files[0]
        hunk = _hunk_header(patch, path, line) if patch else None
        what = f"file {path}, hunk {hunk or f'at line {line}'}"
    elif other:
        what = f"file {other[0][0]} ({other[0][1]})"
    else:
        what = "see git's output below"
    tree_arg = f"git -C {where or tree}"
    details = output.strip() + "\n"
    if where is None:
        details += (f"git am stopped; its state is kept in {tree}.\n"
                    f"  inspect:  {tree_arg} am --show-current-patch=diff\n"
                    f"  continue: fix the files, `{tree_arg} add <files>`, "
                    f"`{tree_arg} am --continue`\n"
                    f"  abort:    {tree_arg} am --abort")
    return HarnessError(f"patch {name} does not apply: {what}", details)


def apply_series(tree, patches):
    """``git am`` ``patches`` onto ``tree``'s HEAD with the fixed committer.

    On failure git am's state is left in place and HarnessError says which
    patch/file/hunk failed and how to continue or abort.
    """
    if not patches:
        return
    proc = git(tree, "am", "--committer-date-is-author-date", "--no-3way",
               *[str(p) for p in patches], check=False)
    if proc.returncode:
        raise am_failure(tree, patches, proc.stdout + proc.stderr)


@contextlib.contextmanager
def scratch_worktree(tree, rev=BASE_TAG, path=None):
    """Yield a detached ``git worktree`` of ``tree`` at ``rev``; remove it after.

    The user's checkout is not touched; objects created in the worktree
    land in ``tree``'s repository.  ``path`` defaults to a temporary folder.
    """
    holder = None if path else pathlib.Path(tempfile.mkdtemp(prefix="novaseries-wt-"))
    path = pathlib.Path(path or holder / "wt")
    git(tree, "worktree", "prune", check=False)
    if path.exists():
        git(tree, "worktree", "remove", "--force", str(path), check=False)
        shutil.rmtree(path, ignore_errors=True)
    git(tree, "worktree", "add", "-q", "--detach", str(path), rev)
    try:
        yield path
    finally:
        git(tree, "worktree", "remove", "--force", str(path), check=False)
        shutil.rmtree(path, ignore_errors=True)
        if holder:
            shutil.rmtree(holder, ignore_errors=True)
        git(tree, "worktree", "prune", check=False)


def expected_head(tree, patches):
    """Commit id the series yields on ``base``, computed in a scratch worktree
    of ``tree`` (the user's checkout is not touched)."""
    if not patches:
        return git(tree, "rev-parse", BASE_TAG)
    with scratch_worktree(tree) as scratch:
        proc = git(scratch, "am", "--committer-date-is-author-date", "--no-3way",
                   *[str(p) for p in patches], check=False)
        if proc.returncode:
            error = am_failure(scratch, patches, proc.stdout + proc.stderr, where="(scratch)")
            error.details += (f"The series does not apply on base; {tree} was not touched.\n"
                              "To work on the failing patch, prepare into a new folder "
                              "with --dest, where git am's state is kept.")
            raise error
        return git(scratch, "rev-parse", "HEAD")


def _same_series(tree, head, want):
    """True if ``base..head`` and ``base..want`` are the same commits but for
    their committer: commit by commit the same tree, message, author and
    author date (so an export of either writes the same patches)."""
    # %T: each commit's own tree, so a hunk moved between commits counts.
    fmt = "--format=%T %an <%ae> %ad%n%B%x00"
    return (git(tree, "log", fmt, f"{BASE_TAG}..{head}")
            == git(tree, "log", fmt, f"{BASE_TAG}..{want}"))


def update_existing(target, tree, patches, force=False):
    """Bring an existing tree to the series without losing anything.

    Up to date: nothing.  HEAD is a prefix of the series: fast-forward.
    Local commits not in the series: refuse, listing them (``force`` keeps
    them on a backup branch, then resets).  Uncommitted changes or a stopped
    git am: always refuse.
    """
    check_tree(tree)
    if am_in_progress(tree):
        raise HarnessError(f"{tree}: a git am is in progress; finish it "
                           f"(git -C {tree} am --continue) or drop it (git -C {tree} am --abort)")
    subject = git(tree, "log", "-1", "--format=%s", BASE_TAG)
    if subject != base_message(target.version):
        raise HarnessError(f"{tree} was made for another release ({subject!r}); "
                           f"target {target.name} is nova {target.version}")
    dirty = status(tree)
    if dirty:
        raise HarnessError(f"{tree} has uncommitted changes; refusing to touch it "
                           "(commit or stash them first)", "\n".join(dirty[:30]))
    head = git(tree, "rev-parse", "HEAD")
    if head == git(tree, "rev-parse", BASE_TAG):
        apply_series(tree, patches)
        say(f"tree: {tree}: was at base; applied {len(patches)} patches")
        return
    want = expected_head(tree, patches)
    if head == want:
        say(f"tree: {tree}: already at the series ({len(patches)} patches), nothing to do")
        return
    if _same_series(tree, head, want):
        # The same commits, made by another committer or at another date
        # (e.g. edited, exported, and unchanged): nothing is lost by moving
        # to the series' reproducible commit ids.
        git(tree, "reset", "-q", "--hard", want)
        say(f"tree: {tree}: same series as {head[:12]} (same contents, messages "
            "and authors); moved to its reproducible commit ids")
        return
    if git(tree, "merge-base", "--is-ancestor", head, want, check=False).returncode == 0:
        git(tree, "merge", "-q", "--ff-only", want)
        say(f"tree: {tree}: fast-forwarded from {head[:12]} to the series "
            f"(+{len(git(tree, 'rev-list', f'{head}..{want}').split())} commits)")
        return
    local = git(tree, "log", "--format=%h %s", f"{want}..{head}")
    if not force:
        raise HarnessError(
            f"{tree} has commits that are not in the series; refusing to touch it",
            f"commits in the tree but not in {target.patches}/series:\n{local}\n"
            f"Export them (novaseries export {target.name}), prepare into another "
            "folder (--dest), or re-run with --force (keeps them on a backup branch).")
    backup = f"novaseries-backup-{head[:12]}"
    git(tree, "branch", "-f", backup, head)
    git(tree, "reset", "-q", "--hard", want)
    say(f"tree: {tree}: your commits are kept on branch {backup}:\n{local}\n"
        f"tree reset to the series ({len(patches)} patches)")


def prepare(ctx, target, dest=None, upto=None, force=False,
            downloader=sdist_mod.pip_download):
    """Make ``dest`` (default build/trees/TARGET) = pristine sdist + series.

    Returns the tree path.  See the module docstring for the guarantees.
    Holds ``<dest>.lock`` meanwhile: a second command preparing the same
    tree waits for the first.
    """
    dest = pathlib.Path(dest or ctx.tree(target.name)).absolute()
    with file_lock(dest.parent / f"{dest.name}.lock", f"tree {dest.name}"):
        return _prepare(ctx, target, dest, upto, force, downloader)


def _prepare(ctx, target, dest, upto, force, downloader):
    if dest.exists() and not dest.is_dir():
        raise HarnessError(f"--dest {dest} exists and is not a folder")
    if upto is None:
        patches, problem = target.series_status()
        if problem and (target.patches / "series").is_file() and \
                (target.patches / "series").read_text().split():
            # The series names patches, but they cannot be read: an error,
            # not an empty series.
            raise HarnessError(problem)
        if problem:
            patches = target.below_series()
            stacked = f" and the {len(patches)} patches it stacks on" if patches else " only"
            LOG.warning(f"warning: {problem}; the tree will hold the pristine base{stacked}")
    else:
        patches = target.select(upto)
    if dest.exists() and any(dest.iterdir()):
        update_existing(target, dest, patches, force)
        return dest
    if dest.exists():
        dest.rmdir()
    create_base(target, dest, ctx.sdist_cache, downloader)
    apply_series(dest, patches)
    if patches:
        say(f"tree: {dest}: applied {len(patches)} patches, HEAD "
            f"{git(dest, 'rev-parse', '--short', 'HEAD')}")
    return dest


def changed_files(tree, rev="HEAD", pathspec=(), since=BASE_TAG, diff_filter="d"):
    """The files of ``since..rev`` (under ``pathspec``) that git's
    ``--diff-filter`` keeps: by default those added or modified, which
    exist at ``rev``; ``A``: those added."""
    out = git(tree, "diff", "--name-only", f"--diff-filter={diff_filter}", f"{since}..{rev}",
              "--", *pathspec)
    return [line for line in out.splitlines() if line]
