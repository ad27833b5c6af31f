"""``backport``: a stable target's tree as the commits to propose on Gerrit.

OpenStack backports a change one branch at a time, newest first: master,
then stable/2026.1 from master's commit, stable/2025.2 from stable/2026.1's,
and so on; each backport's message ends with one ``(cherry picked from
commit <sha>)`` line per branch above it, master's first, as ``git
cherry-pick -x`` appends them.  Those lines can only exist once the change
has merged on every branch above, so the folders in patches/ (what
packagers apply) never carry them: :func:`backport` looks each commit of
the tree's ``base..HEAD`` up by its ``Change-Id`` in a clone of upstream
Nova and writes a branch of the tree whose commits are the same but for
those lines (same trees, authors, committers and dates).  The tree's
current branch and HEAD are not touched.

The branches come from targets.toml's ``[gerrit_branches]``
(:func:`novaseries.targets.gerrit_branches`); a commit whose Change-Id no
master folder of patches/ has (a stable-only fix) gets no line.
"""

import dataclasses
import pathlib
import re
import tempfile

from novaseries import targets as targets_mod
from novaseries import tree as tree_mod
from novaseries.util import HarnessError, git

#: A Change-Id footer line (the whole line).
CHANGE_ID = re.compile(r"^Change-Id: (I[0-9a-f]{40})$", re.M)
#: A ``git cherry-pick -x`` line (the whole line).
CHERRY_PICKED = re.compile(r"^\(cherry picked from commit [0-9a-f]{40}\)$", re.M)


def cherry_picked(sha):
    """The line ``git cherry-pick -x`` appends for a pick of ``sha``."""
    return f"(cherry picked from commit {sha})"


def default_branch(gerrit_branch):
    """The tree's branch ``backport`` writes by default:
    ``backport/<gerrit branch, / replaced by ->``."""
    return "backport/" + gerrit_branch.replace("/", "-")


def chain(branches, release):
    """``(branch, above)`` for a backport of ``release``: its Gerrit branch
    and the branches it is cherry-picked through, master first, newest
    first (``branches``: :func:`novaseries.targets.gerrit_branches`; end
    of life ones, deleted, are left out).

    :raises HarnessError: the release has no entry, is master's (not a
        backport) or at end of life.
    """
    if release not in branches:
        raise HarnessError(f"release {release} has no Gerrit branch in targets.toml "
                           f"[gerrit_branches] (known: {', '.join(branches) or 'none'})")
    branch = branches[release]
    if branch is None:
        raise HarnessError(f"release {release} is end of life: its branch is deleted and "
                           "takes no backport (its folders are for packagers only)")
    if branch == "master":
        raise HarnessError(f"release {release} is master: its commits are proposed as they "
                           "are, not backported")
    names = list(branches)
    above = [branches[r] for r in names[:names.index(release)] if branches[r] is not None]
    return branch, above


def message_change_id(message):
    """The Change-Id of a commit message's last paragraph (its footer), or
    None."""
    found = CHANGE_ID.findall(message.rstrip().split("\n\n")[-1])
    return found[-1] if found else None


def patch_change_ids(patch):
    """The Change-Ids of a ``git format-patch`` file's message."""
    text = pathlib.Path(patch).read_text(errors="replace")
    return set(CHANGE_ID.findall(text.split("\n---\n", 1)[0]))


def master_change_ids(ctx, branches):
    """The Change-Ids of every patch of the targets of master's release
    (``[gerrit_branches]``' ``"master"`` entry): their folders and those
    they stack on."""
    masters = {release for release, branch in branches.items() if branch == "master"}
    return {cid for release in masters
            for cid in folder_patches(ctx).get(release, {})}


def folder_patches(ctx):
    """``{release: {change_id: [patch, ...]}}``: the patch files of every
    target of each release, by Change-Id (two folders may hold one change:
    nodeleak/<release> and nodeleak/on-teardown/<release>)."""
    found = {}
    for target in targets_mod.load(ctx).values():
        for patch in target.series():
            for cid in patch_change_ids(patch):
                paths = found.setdefault(target.release, {}).setdefault(cid, [])
                if patch not in paths:
                    paths.append(patch)
    return found


def changed_lines(diff):
    """The lines a diff adds or removes, whitespace-stripped, each with its
    file (``[(path, "+line"), ...]``, in order): what a change does,
    without the context lines that differ between branches."""
    lines, path = [], None
    for line in diff.splitlines():
        if line == "-- ":
            break  # format-patch's signature
        if line.startswith("diff --git "):
            path = line.split(" b/", 1)[-1]
        elif line.startswith(("+++ ", "--- ")):
            continue
        elif path and line[:1] in ("+", "-"):
            lines.append((path, line[0] + "".join(line[1:].split())))
    return lines


def _patch_diff(patch):
    """The diff of a ``git format-patch`` file (after its ``---`` line)."""
    text = pathlib.Path(patch).read_text(errors="replace")
    return text.split("\n---\n", 1)[-1]


@dataclasses.dataclass
class Commit:
    """One commit of the tree's series, as ``git cat-file`` shows it."""

    sha: str
    tree: str
    author: tuple   # (name, email, "@seconds tz")
    committer: tuple
    message: str

    @property
    def subject(self):
        return self.message.split("\n", 1)[0]


_IDENT = re.compile(r"^(author|committer) (.*?) <(.*)> (\d+) ([+-]\d{4})$")


def read_commit(tree, sha):
    """The :class:`Commit` ``sha`` of ``tree`` (its raw object)."""
    raw = git(tree, "cat-file", "commit", sha)
    head, _, message = raw.partition("\n\n")
    fields = {}
    for line in head.splitlines():
        match = _IDENT.match(line)
        if match:
            fields[match.group(1)] = (match.group(2), match.group(3),
                                      f"@{match.group(4)} {match.group(5)}")
        elif line.startswith("tree "):
            fields["tree"] = line.split()[1]
    return Commit(sha, fields["tree"], fields["author"], fields["committer"],
                  message + "\n")


def upstream_ref(upstream, remote, branch):
    """The commit of ``<remote>/<branch>`` in the clone ``upstream`` (or of
    its local branch ``branch`` when that remote ref does not exist);
    HarnessError when neither exists."""
    for ref in (f"refs/remotes/{remote}/{branch}", f"refs/heads/{branch}"):
        proc = git(upstream, "rev-parse", "-q", "--verify", f"{ref}^{{commit}}", check=False)
        if proc.returncode == 0:
            return ref, proc.stdout.strip()
    raise HarnessError(f"--upstream {upstream} has no branch {branch} (neither {remote}/{branch} "
                       f"nor a local {branch}): fetch it (git -C {upstream} fetch {remote})")


def find_merged(upstream, rev_range, change_ids):
    """``{change_id: [sha, ...]}`` (oldest first): the commits of
    ``rev_range`` (git log arguments) in ``upstream`` whose message has
    one of ``change_ids`` as a whole ``Change-Id:`` line."""
    if not change_ids:
        return {}
    greps = [f"--grep=^Change-Id: {cid}$" for cid in sorted(change_ids)]
    out = git(upstream, "log", "--reverse", "--format=%H%x00%B%x00", *greps, *rev_range)
    found = {}
    fields = out.split("\x00")
    for sha, body in zip(fields[0::2], fields[1::2]):
        for cid in set(CHANGE_ID.findall(body)) & set(change_ids):
            found.setdefault(cid, []).append(sha.strip())
    return found


@dataclasses.dataclass
class Result:
    """What :func:`backport` wrote: ``branch`` of the tree, for
    ``gerrit_branch``; ``commits``: ``(old Commit, new sha, [(branch,
    upstream sha), ...] or None for a stable-only commit)``; ``unchanged``:
    the branch already held exactly these commits; ``start``: the commit
    they stand on, ``base`` or the last commit of the target's ``below``
    folders (on the branch unchanged, merged on ``gerrit_branch``)."""

    tree: pathlib.Path
    branch: str
    gerrit_branch: str
    commits: list
    unchanged: bool = False
    start: str = "base"


def backport(ctx, target, tree, upstream, remote="origin", branch=None):
    """Write ``tree``'s ``base..HEAD`` with its cherry-pick lines as the
    tree's branch ``branch`` (default: :func:`default_branch`).

    The commits of the target's ``below`` folders must have merged on the
    Gerrit branch (by Change-Id) and stay as they are; the target's own
    are rewritten.  Each one's Change-Id is looked up on master (``<remote>/master``)
    and on every newer branch above the target's (:func:`chain`), on a
    branch among its own commits (those master does not have); one line
    per branch, master's first, right after the footer.  A commit whose
    Change-Id no master folder has gets no line.  Nothing is written when
    any commit is refused (no Change-Id; not merged on a branch above:
    stable policy; merged twice there; merged adding or removing other
    lines than our folder of that branch's release: :func:`changed_lines`)
    or the branch exists with other commits.  Returns a :class:`Result`.
    """
    tree = pathlib.Path(tree)
    upstream = pathlib.Path(upstream)
    branches = targets_mod.gerrit_branches(ctx)
    gerrit_branch, above = chain(branches, target.release)
    branch = branch or default_branch(gerrit_branch)
    tree_mod.check_tree(tree)
    subject = git(tree, "log", "-1", "--format=%s", "base")
    if subject != tree_mod.base_message(target.version):
        raise HarnessError(f"{tree} was made for another release ({subject!r}); "
                           f"target {target.name} is nova {target.version}")
    dirty = tree_mod.status(tree)
    if dirty:
        raise HarnessError(f"{tree} has uncommitted changes: commit them first (backport "
                           "writes the commits of base..HEAD)", "\n".join(dirty[:30]))
    if git(tree, "check-ref-format", "--branch", branch, check=False).returncode:
        raise HarnessError(f"--branch {branch!r} is not a valid branch name")
    if git(upstream, "rev-parse", "--git-dir", check=False).returncode:
        raise HarnessError(f"--upstream {upstream} is not a git repository (a clone of "
                           "https://opendev.org/openstack/nova)")
    every = [read_commit(tree, sha) for sha in tree_mod.series_commits(tree)]
    below = target.below_series()
    if len(every) <= len(below):
        raise HarnessError(f"{tree} has {len(every)} commits after base, target "
                           f"{target.name}'s below folders alone have {len(below)}: "
                           "nothing of its own to backport")
    # the below folders' commits are other changes: they must have merged
    # on the Gerrit branch already, and the branch keeps them as they are
    lower, commits = every[:len(below)], every[len(below):]

    problems = []
    masters = master_change_ids(ctx, branches)
    mine = folder_patches(ctx)
    releases = {branch: release for release, branch in branches.items()}
    ids = {}
    for commit in commits:
        cid = message_change_id(commit.message)
        if CHERRY_PICKED.search(commit.message):
            problems.append(f"{commit.sha[:12]} {commit.subject!r} already has a "
                            "(cherry picked from commit ...) line: run backport on the "
                            "series' commits (prepare the tree again), not on its output")
        elif cid is None:
            problems.append(f"{commit.sha[:12]} {commit.subject!r} has no Change-Id in its "
                            "footer")
        ids[commit.sha] = cid
    wanted = {cid for cid in ids.values() if cid in masters}

    if lower:
        gerrit_ref, _ = upstream_ref(upstream, remote, gerrit_branch)
        lower_ids = {message_change_id(c.message) for c in lower} - {None}
        merged = find_merged(upstream, [gerrit_ref], lower_ids)
        for commit, patch in zip(lower, below):
            cid = message_change_id(commit.message)
            if cid not in merged:
                problems.append(f"{commit.sha[:12]} {commit.subject!r} (Change-Id {cid}) of "
                                f"{_folder(ctx, patch)} has not merged on {gerrit_branch}: "
                                f"target {target.name}'s commits stand on it; propose "
                                f"{_folder(ctx, patch)} first")

    master_ref, _ = upstream_ref(upstream, remote, "master")
    found = {}
    for name in above:
        ref, _ = upstream_ref(upstream, remote, name)
        # a stable branch's own commits: not those it shares with master
        found[name] = find_merged(upstream, [ref] if ref == master_ref else
                                  [ref, "--not", master_ref], wanted)

    picks = {}
    for commit in commits:
        cid = ids[commit.sha]
        if cid is None or cid not in masters:
            picks[commit.sha] = None
            continue
        lines = []
        for name in above:
            shas = found[name].get(cid, [])
            if not shas:
                problems.append(f"{commit.sha[:12]} {commit.subject!r} (Change-Id {cid}) "
                                f"has not merged on {name} yet: stable policy: it merges on "
                                f"{name} first")
            elif len(shas) > 1:
                problems.append(f"{commit.sha[:12]} {commit.subject!r} (Change-Id {cid}) "
                                f"merged more than once on {name}: {', '.join(shas)}; "
                                "which one it was cherry-picked from is for you to say")
            else:
                lines.append((name, shas[0]))
                problem = _differs(upstream, name, shas[0], cid, mine, releases)
                if problem:
                    problems.append(f"{commit.sha[:12]} {commit.subject!r} (Change-Id "
                                    f"{cid}): {problem}")
        picks[commit.sha] = lines
    if problems:
        more = f" (and {len(problems) - 1} more below)" if len(problems) > 1 else ""
        raise HarnessError(f"backport refused, nothing written: {problems[0]}{more}",
                           "\n".join(problems) + f"\n(upstream: {upstream})")

    start = lower[-1].sha if lower else "base"
    parent = git(tree, "rev-parse", f"{start}^{{commit}}")
    written = []
    with tempfile.TemporaryDirectory(prefix="novaseries-backport-") as scratch:
        message_file = pathlib.Path(scratch) / "message"
        for commit in commits:
            lines = picks[commit.sha] or []
            message = commit.message.rstrip() + "\n"
            message += "".join(cherry_picked(sha) + "\n" for _, sha in lines)
            message_file.write_text(message)
            env = dict(GIT_AUTHOR_NAME=commit.author[0], GIT_AUTHOR_EMAIL=commit.author[1],
                       GIT_AUTHOR_DATE=commit.author[2],
                       GIT_COMMITTER_NAME=commit.committer[0],
                       GIT_COMMITTER_EMAIL=commit.committer[1],
                       GIT_COMMITTER_DATE=commit.committer[2])
            parent = git(tree, "commit-tree", commit.tree, "-p", parent,
                         "-F", str(message_file), env=env)
            written.append((commit, parent, picks[commit.sha]))

    ref = f"refs/heads/{branch}"
    old = git(tree, "rev-parse", "-q", "--verify", ref, check=False)
    old = old.stdout.strip() if old.returncode == 0 else ""
    if old == parent:
        return Result(tree, branch, gerrit_branch, written, unchanged=True, start=start)
    if old:
        raise HarnessError(f"{tree} already has a branch {branch} with other commits; "
                           f"nothing written (backport replaces no branch: delete it with "
                           f"`git -C {tree} branch -D {branch}`, or give --branch)")
    git(tree, "update-ref", "-m", f"novaseries backport {target.name}", ref, parent, "")
    return Result(tree, branch, gerrit_branch, written, start=start)


def _folder(ctx, patch):
    """A patch's folder, relative to the project root where it can be."""
    folder = pathlib.Path(patch).parent
    try:
        return str(folder.relative_to(ctx.root))
    except ValueError:
        return str(folder)


def _differs(upstream, branch, sha, cid, mine, releases):
    """None if the upstream commit ``sha`` (merged on ``branch``) adds and
    removes the lines one of our patches of that branch's release with
    Change-Id ``cid`` does (context lines may differ); else why not.  A
    release none of whose folders has the change is not compared."""
    patches = mine.get(releases.get(branch), {}).get(cid, [])
    if not patches:
        return None
    merged = changed_lines(git(upstream, "show", "--format=", sha))
    if any(changed_lines(_patch_diff(p)) == merged for p in patches):
        return None
    return (f"merged on {branch} as {sha[:12]}, which adds or removes other lines than "
            f"{', '.join(p.name for p in patches)}: the change merged is not the one in "
            "the folders; export the merged version first, then backport")
