"""``backport``: a stable target's own folder as the patches to propose on
Gerrit.

OpenStack backports a change one branch at a time, newest first: master,
then stable/2026.1 from master's commit, stable/2025.2 from stable/2026.1's,
and so on; each backport's message ends with one ``(cherry picked from
commit <sha>)`` line per branch above it, master's first, as ``git
cherry-pick -x`` appends them.  Those lines can only exist once the change
has merged on every branch above, so the folders in patches/ (what
packagers apply) never carry them: :func:`backport` looks each patch of
the target's own folder up by its ``Change-Id`` in a clone of upstream
Nova, checks that what merged there adds and removes the lines our folder
of that branch's release does, and writes the folder's patches with those
lines and the real bug numbers (``--bug``) to a new folder, for ``git am``
onto the Gerrit branch.  The changes of the target's ``below`` folders are
not proposed again: they must have merged on the Gerrit branch, as our
folders hold them.

The branches come from targets.toml's ``[gerrit_branches]``
(:func:`novaseries.targets.gerrit_branches`); a patch whose Change-Id no
master folder of patches/ has (a stable-only fix) gets no line.
"""

import dataclasses
import pathlib
import re

from novaseries import export
from novaseries import lint
from novaseries import quilt
from novaseries import targets as targets_mod
from novaseries.util import HarnessError, git

#: A ``git cherry-pick -x`` line (the whole line).
CHERRY_PICKED = re.compile(r"^\(cherry picked from commit [0-9a-f]{40}\)$", re.M)
#: ``git format-patch``'s signature at the end of a patch file.
SIGNATURE = re.compile(r"\n-- \n[0-9][^\n]*\n*\Z")


def cherry_picked(sha):
    """The line ``git cherry-pick -x`` appends for a pick of ``sha``."""
    return f"(cherry picked from commit {sha})"


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
    if branch == targets_mod.DEVELOPMENT_BRANCH:
        raise HarnessError(f"release {release} is {branch}: its commits are proposed as they "
                           "are, not backported")
    names = list(branches)
    above = [branches[r] for r in names[:names.index(release)] if branches[r] is not None]
    return branch, above


def split(text):
    """A ``git format-patch`` file's ``(header and message, diff)``: the
    text before its first ``---`` line and the rest."""
    head, sep, diff = text.partition("\n---\n")
    if not sep:
        raise HarnessError("not a git format-patch file: no '---' line after its message")
    return head, diff


def message_change_id(head):
    """The Change-Id of a message's last paragraph (its footer), or None."""
    found = lint.CHANGE_ID.findall(head.rstrip().split("\n\n")[-1])
    return found[-1] if found else None


def changed_lines(diff):
    """The lines a diff adds or removes, trailing whitespace stripped, each
    with its file (``[(path, "+line"), ...]``, in order): what a change
    does, without the context lines and line numbers that differ between
    branches."""
    lines, path = [], None
    for line in SIGNATURE.sub("\n", diff).splitlines():
        if line.startswith("diff --git "):
            path = line.split(" b/", 1)[-1]
        elif line.startswith(("+++ ", "--- ")):
            continue
        elif path and line[:1] in ("+", "-"):
            lines.append((path, line.rstrip()))
    return lines


@dataclasses.dataclass
class Patch:
    """One patch file of a folder, its bug placeholders replaced: its
    ``name``, ``text``, ``subject`` and footer's ``change_id`` (or None)."""

    path: pathlib.Path
    name: str
    text: str
    subject: str
    change_id: str

    @property
    def head(self):
        return split(self.text)[0]


def read_patch(path, bugs):
    """The :class:`Patch` of ``path``, ``bugs`` (``{placeholder: number}``)
    replaced in its name, text and subject (:func:`novaseries.quilt.
    read_format_patch` reads that; the ``index`` lines keep the folder's
    blob names: ``git am -3`` falls back on them only for those files)."""
    path = pathlib.Path(path)
    text = export.substitute(path.read_text(), bugs)
    return Patch(path, export.substitute(path.name, bugs), text,
                 export.substitute(quilt.read_format_patch(path).subject, bugs),
                 message_change_id(split(text)[0]))


def folder_patches(ctx, bugs):
    """``{release: {change_id: [Patch, ...]}}``: the patches of every
    target of each release, by Change-Id (two folders may hold one change:
    nodeleak/<release> and nodeleak/on-teardown/<release>)."""
    found, seen = {}, set()
    for target in targets_mod.load(ctx).values():
        for path in target.series():
            if (target.release, path) in seen:
                continue
            seen.add((target.release, path))
            patch = read_patch(path, bugs)
            if patch.change_id:
                found.setdefault(target.release, {}).setdefault(
                    patch.change_id, []).append(patch)
    return found


def upstream_ref(upstream, remote, branch):
    """``(ref, sha)`` of ``<remote>/<branch>`` in the clone ``upstream`` (or
    of its local branch ``branch`` when that remote ref does not exist);
    HarnessError when neither exists."""
    for ref in (f"refs/remotes/{remote}/{branch}", f"refs/heads/{branch}"):
        proc = git(upstream, "rev-parse", "-q", "--verify", f"{ref}^{{commit}}", check=False)
        if proc.returncode == 0:
            return ref, proc.stdout.strip()
    raise HarnessError(f"--upstream {upstream} has no branch {branch} (neither {remote}/{branch} "
                       f"nor a local {branch}): fetch it (git -C {upstream} fetch {remote})")


def short_ref(ref):
    """``refs/remotes/origin/x`` -> ``origin/x``; ``refs/heads/x`` -> ``x``."""
    return re.sub(r"^refs/(remotes|heads)/", "", ref)


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
        for cid in set(lint.CHANGE_ID.findall(body)) & set(change_ids):
            found.setdefault(cid, []).append(sha.strip())
    return found


def differs(upstream, branch, sha, patches, left, root):
    """None if the upstream commit ``sha`` (merged on ``branch``) adds and
    removes the lines one of ``patches`` (ours of that change and release)
    does; else why not (``left``: the bug placeholders ``--bug`` did not
    replace, named as the likely cause)."""
    merged = changed_lines(git(upstream, "show", "--format=", "--no-ext-diff", "--no-color",
                               "--src-prefix=a/", "--dst-prefix=b/", sha))
    if any(changed_lines(split(p.text)[1]) == merged for p in patches):
        return None
    named = sorted({ph for p in patches for ph in left if ph in p.text})
    hint = (f" (ours still name the placeholder {', '.join(named)}: give --bug)"
            if named else "; export the merged version into the folders first")
    return (f"merged on {branch} as {sha[:12]}, which adds or removes other lines than "
            f"{', '.join(_where(root, p.path) for p in patches)}"
            + hint)


def _where(root, path):
    """``path`` relative to the project ``root`` where it can be."""
    try:
        return str(pathlib.Path(path).relative_to(root))
    except ValueError:
        return str(path)


@dataclasses.dataclass
class Result:
    """What :func:`backport` wrote to ``out``: ``patches``: ``(Patch,
    [(branch, upstream sha), ...] or None for a stable-only change)``, in
    order; ``gerrit_branch`` and the upstream ``ref`` it stands on."""

    out: pathlib.Path
    gerrit_branch: str
    ref: str
    patches: list


def backport(ctx, target, upstream, out, remote="origin", bugs=None):
    """Write the patches of ``target``'s own folder with their cherry-pick
    lines and ``bugs`` (``{placeholder: number}``) to the new folder
    ``out`` (missing or empty) and its ``series``.

    Each patch's Change-Id is looked up on master (``<remote>/master``)
    and on every newer branch above the target's (:func:`chain`), on a
    branch among its own commits (those master does not have); one line
    per branch, master's first, right after the footer, where the merged
    commit adds and removes the lines (:func:`changed_lines`) of our
    folder of that branch's release.  A patch whose Change-Id no master
    folder has gets no line.  Each change of the target's ``below``
    folders must have merged on the target's Gerrit branch, as our folder
    holds it.  Nothing is written when anything is refused: a patch
    without a Change-Id, or with a cherry-pick line, or naming a bug
    placeholder ``bugs`` does not replace; a change not merged on a branch
    above (stable policy), merged twice there, or merged with other lines.
    Returns a :class:`Result`.
    """
    upstream = pathlib.Path(upstream)
    bugs = dict(bugs or {})
    branches = targets_mod.gerrit_branches(ctx)
    gerrit_branch, above = chain(branches, target.release)
    if git(upstream, "rev-parse", "--git-dir", check=False).returncode:
        raise HarnessError(f"--upstream {upstream} is not a git repository (a clone of "
                           "https://opendev.org/openstack/nova)")
    quilt.refuse_out(out)
    own = [read_patch(path, bugs) for path in target.own_series()]
    if not own:
        raise HarnessError(f"target {target.name}'s folder {target.patches} has no patch")
    below = [read_patch(path, bugs) for path in target.below_series()]
    known = {v: k for k, v in targets_mod.placeholders(ctx).items()}
    mine = folder_patches(ctx, bugs)
    releases = {branch: release for release, branch in branches.items()}
    folders = targets_mod.gerrit_folders(ctx)
    masters = {cid for release, branch in branches.items()
               if branch == targets_mod.DEVELOPMENT_BRANCH
               for cid in mine.get(release, {})}
    left = sorted(set(known) - set(bugs))

    problems = []
    for patch in own:
        named = [ph for ph in left if ph in patch.text]
        if CHERRY_PICKED.search(patch.head):
            problems.append(f"{patch.name} already has a (cherry picked from commit ...) line")
        elif patch.change_id is None:
            problems.append(f"{patch.name} has no Change-Id in its footer")
        if named:
            problems.append(f"{patch.name} names the bug placeholder {', '.join(named)}: "
                            "give the real number ("
                            + ", ".join(f"--bug {known[ph]}=NUMBER" for ph in named) + ")")

    ref, _ = upstream_ref(upstream, remote, gerrit_branch)
    # what has merged on the Gerrit branch: the below changes must, the
    # target's own must not
    merged = find_merged(upstream, [ref], {p.change_id for p in below + own} - {None})
    for patch in below:
        shas = merged.get(patch.change_id, [])
        where = _where(ctx.root, patch.path)
        if not shas:
            problems.append(f"{where} {patch.subject!r} (Change-Id {patch.change_id}) "
                            f"has not merged on {gerrit_branch}: target {target.name}'s "
                            f"changes stand on it; propose "
                            f"{_where(ctx.root, patch.path.parent)} first")
            continue
        why = differs(upstream, gerrit_branch, shas[-1], [patch], left, ctx.root)
        if why:
            problems.append(f"{where} {patch.subject!r} (Change-Id {patch.change_id}): "
                            f"{why}")

    for patch in own:
        for sha in merged.get(patch.change_id, []):
            problems.append(f"{patch.name} {patch.subject!r} (Change-Id {patch.change_id}) "
                            f"has merged on {gerrit_branch} already, as {sha[:12]}")

    master_ref, _ = upstream_ref(upstream, remote, targets_mod.DEVELOPMENT_BRANCH)
    wanted = {p.change_id for p in own if p.change_id in masters}
    found = {}
    for name in above:
        branch_ref, _ = upstream_ref(upstream, remote, name)
        # a stable branch's own commits: not those it shares with master
        found[name] = find_merged(upstream, [branch_ref] if branch_ref == master_ref else
                                  [branch_ref, "--not", master_ref], wanted)

    picks = []
    for patch in own:
        cid = patch.change_id
        if cid is None or cid not in masters:
            picks.append((patch, None))
            continue
        lines = []
        for name in above:
            shas = found[name].get(cid, [])
            if not shas:
                problems.append(f"{patch.name} {patch.subject!r} (Change-Id {cid}) has not "
                                f"merged on {name} yet: stable policy: it merges on {name} "
                                "first")
            elif len(shas) > 1:
                problems.append(f"{patch.name} {patch.subject!r} (Change-Id {cid}) merged more "
                                f"than once on {name}: {', '.join(shas)}; which one it was "
                                "cherry-picked from is for you to say")
            else:
                lines.append((name, shas[0]))
                release = folders.get(releases[name], releases[name])
                ours = mine.get(release, {}).get(cid, [])
                why = (differs(upstream, name, shas[0], ours, left, ctx.root) if ours else
                       f"merged on {name} as {shas[0][:12]}, but no folder of release "
                       f"{release} holds it to check that against (targets.toml "
                       "[gerrit_folders])")
                if why:
                    problems.append(f"{patch.name} {patch.subject!r} (Change-Id {cid}): {why}")
        picks.append((patch, lines))
    if problems:
        more = f" (and {len(problems) - 1} more below)" if len(problems) > 1 else ""
        raise HarnessError(f"backport refused, nothing written: {problems[0]}{more}",
                           "\n".join(problems) + f"\n(upstream: {upstream})")

    entries = []
    for patch, lines in picks:
        head, diff = split(patch.text)
        head = head.rstrip("\n") + "\n" + "".join(cherry_picked(sha) + "\n"
                                                  for _, sha in lines or ())
        entries.append(quilt.Entry(patch.name, patch.path, (head + "---\n" + diff).encode()))
    written = quilt.write(entries, out)
    return Result(written, gerrit_branch, short_ref(ref), picks)
