"""``export``: write a tree's commits since ``base`` back to the patches folder.

Output is ``git format-patch --no-signature --zero-commit -N`` run with no
user configuration, so a re-export of an unchanged tree is byte-identical
(``git status`` stays clean).  Options only the submitter should use
(real bug numbers, Signed-off-by, disclosure trailers, the author) are
applied to the exported files, never to the tree.
"""

import email.utils
import os
import pathlib
import re
import shutil
import subprocess
import tempfile

from novaseries import target_model, tree as tree_mod, util
from novaseries.util import LOG, HarnessError, git, git_env, run, say

#: ``--abbrev=7``: the index lines' object names at git's historical
#: length, not core.abbrev's "auto", which grows with the repository's
#: object count (a tree with more history would rewrite every index line).
FORMAT_PATCH = ("format-patch", "--no-signature", "--zero-commit", "-N", "--quiet",
                "--abbrev=7")


def parse_bugs(values, known):
    """``["main=1234567", ...]`` -> ``{placeholder: number}``.

    ``known`` maps bug names to placeholders (targets.toml ``[bugs]``).
    Raises HarnessError for unknown names or non-numeric values.
    """
    mapping = {}
    for value in values or ():
        name, sep, number = value.partition("=")
        if not sep or name not in known:
            raise HarnessError(f"--bug {value!r}: expected NAME=NUMBER with NAME one of "
                               f"{', '.join(known)}")
        if not re.fullmatch(r"[0-9]+", number):
            raise HarnessError(f"--bug {value!r}: the bug number must be digits")
        if known[name] in mapping:
            raise HarnessError(f"--bug {value!r}: {name} is given twice")
        mapping[known[name]] = number
    return mapping


def substitute(text, mapping):
    """Replace every placeholder of ``mapping`` in ``text``."""
    for placeholder, number in mapping.items():
        text = text.replace(placeholder, number)
    return text


def substitute_bytes(data, mapping):
    """:func:`substitute` for ``data`` in bytes (a patch file): a
    replacement within lines leaves a diff's hunks as they are."""
    for placeholder, number in (mapping or {}).items():
        data = data.replace(placeholder.encode(), number.encode())
    return data


def _format_patch(tree, rev_range, outdir):
    git(tree, *FORMAT_PATCH, "-o", str(outdir), rev_range)
    return sorted(pathlib.Path(outdir).glob("*.patch"))


def parse_author(text):
    """``"Name <email>"`` (``export --author``) -> ``(name, email)``.

    :raises HarnessError: not a name (no ``<``, ``>`` or line break) then
        one address with an ``@`` and no blanks in angle brackets, and
        nothing else.
    """
    match = re.fullmatch(r"([^<>\s](?:[^<>\n]*[^<>\s])?) <([^<>\s@]+@[^<>\s@]+)>", text)
    if not match:
        raise HarnessError(f"--author {text!r}: expected 'Name <email@example.org>' "
                           "(a name, a space, an email address in angle brackets)")
    return match.group(1), match.group(2)


def set_author(data, author):
    """The format-patch text ``data`` (bytes) with its ``From:`` header
    (and the header's continuation lines) saying ``author``, a ``(name,
    email)`` pair (quoted and encoded as a mail header, so that git am
    reads it back exactly)."""
    head, sep, body = data.partition(b"\n\n")
    lines, kept, skipping = head.split(b"\n"), [], False
    header = "From: " + email.utils.formataddr(author)
    for line in lines:
        if skipping and line[:1] in (b" ", b"\t"):
            continue
        skipping = line.startswith(b"From: ")
        kept.append(header.encode() if skipping else line)
    return b"\n".join(kept) + sep + body


def _rewrite(tree, files, mapping, author, outdir, start=tree_mod.BASE_TAG):
    """Re-apply ``files`` with placeholders replaced (contents, file names,
    messages) and ``author`` (``(name, email)`` or None) as the author, in
    a scratch worktree, and format-patch the result, so index lines and
    diffstats match the substituted contents."""
    subst = pathlib.Path(outdir).parent / "substituted"
    subst.mkdir()
    rewritten = []
    for path in files:
        new = subst / substitute(path.name, mapping)
        data = substitute_bytes(path.read_bytes(), mapping)
        if author:
            data = set_author(data, author)
        new.write_bytes(data)
        rewritten.append(new)
    with tree_mod.scratch_worktree(tree, start) as scratch:
        tree_mod.apply_series(scratch, rewritten)
        return _format_patch(scratch, f"{start}..HEAD", outdir)


def patch_id(text):
    """``git patch-id --stable`` of a diff or commit text (None if empty)."""
    proc = subprocess.run(["git", "patch-id", "--stable"], input=text, text=True,
                          capture_output=True, env=git_env(), check=False)
    return proc.stdout.split()[0] if proc.stdout.split() else None


def below_commit(target, tree, commits):
    """The last commit of the tree that belongs to the target's ``below``
    series (``base`` without one): export starts after it.

    Refuses (HarnessError) if those commits no longer match the ``below``
    patches -- the edit belongs to the target that owns them, and exporting
    this one would drop it.
    """
    below = target.below_series()
    if not below:
        return tree_mod.BASE_TAG
    if len(commits) < len(below):
        raise HarnessError(f"{tree} has {len(commits)} commits; target {target.name} "
                           f"stacks on {len(below)} patches of {target.below_names()}")
    for commit, path in zip(commits, below):
        shown = git(tree, "show", "--format=", commit)
        if patch_id(shown) != patch_id(path.read_text()):
            raise HarnessError(
                f"{tree}: commit {commit[:12]} differs from {path} (below target "
                f"{target.name}'s own patches); refusing to export, as that edit "
                "would be lost",
                f"Make the change in the tree of the target that owns {target.below_names()} "
                "and export it there.")
    return commits[len(below) - 1]


def signoff_trailer(tree):
    """``Signed-off-by: Name <email>`` from the user's own git identity."""
    proc = run(["git", "-C", tree, "var", "GIT_COMMITTER_IDENT"], check=False)
    ident = re.sub(r" \d+ [+-]\d{4}$", "", proc.stdout.strip())
    if proc.returncode or not ident or util.IDENTITY_EMAIL in ident:
        raise HarnessError("--signoff needs your git identity: git config --global "
                           "user.name/user.email")
    return f"Signed-off-by: {ident}"


def add_trailers(files, trailers):
    """Append trailers to each patch's message (before the ``---`` line)."""
    if not trailers:
        return
    for path in files:
        args = []
        for trailer in trailers:
            args += ["--trailer", trailer]
        run(["git", "interpret-trailers", "--in-place", *args, str(path)], env=git_env())


def warn_placeholders_left(left, known, cost=""):
    """A warning for each bug placeholder of ``left`` (``{placeholder:
    [patch name, ...]}``): the patches it is left in, ``cost`` (what
    that costs, e.g. ``"no Bug: header for it; "``) and the ``--bug`` that
    replaces it (``known``: ``{name: placeholder}`` of targets.toml
    ``[bugs]``)."""
    names = {v: k for k, v in (known or {}).items()}
    for value, where in left.items():
        option = (f"--bug {names[value]}=NUMBER" if value in names
                  else "--bug NAME=NUMBER (it is not a placeholder of targets.toml [bugs])")
        LOG.warning(f"warning: bug placeholder {value} left in {len(where)} patch(es) "
                    f"({where[0]}{', ...' if len(where) > 1 else ''}): {cost}give its "
                    f"number with {option}")


def warn_placeholders(files, known):
    """A warning for each placeholder of ``known`` (``{name: placeholder}``,
    targets.toml ``[bugs]``) still in ``files`` once ``--bug`` replaced
    some: a submission with a number left out carries the placeholder
    in its file names, messages and reno links."""
    contents = {f.name: f.read_bytes() for f in files}
    left = {}
    for placeholder in (known or {}).values():
        where = [n for n, data in contents.items()
                 if placeholder in n or placeholder.encode() in data]
        if where:
            left[placeholder] = where
    warn_placeholders_left(left, known)


def export(target, tree, out=None, bugs=None, signoff=False, trailers=(), author=None,
           placeholders_known=None):
    """Export ``base..HEAD`` of ``tree`` into ``out`` (default: the target's
    patches folder) and rewrite its ``series``.  Returns the written names.

    ``bugs``: ``{placeholder: number}`` (:func:`parse_bugs`) replaced in the
    exported patches; ``signoff``/``trailers``: trailers added to each
    message; ``author``: ``(name, email)`` (:func:`parse_author`), the
    author of each exported patch (None: the tree's commits' own).

    Refuses (HarnessError, nothing written) if the tree has uncommitted or
    untracked changes, a git am in progress, or no commits since base.
    """
    tree = pathlib.Path(tree)
    tree_mod.check_tree(tree)
    if tree_mod.am_in_progress(tree):
        raise HarnessError(f"{tree}: a git am is in progress; finish or abort it before export")
    dirty = tree_mod.status(tree)
    if dirty:
        raise HarnessError(f"{tree} has uncommitted changes; refusing to export "
                           "(commit them, or stash them, and export again)",
                           "\n".join(dirty[:30]))
    if not target.exportable:
        raise HarnessError(f"target {target.name} is a combination of other targets' "
                           "series and is not exported; export the targets that own "
                           "its patches")
    commits = tree_mod.series_commits(tree)
    if not commits:
        raise HarnessError(f"{tree} has no commits since base: nothing to export")
    start = below_commit(target, tree, commits)
    trailers = list(trailers or ())
    if signoff:
        trailers.append(signoff_trailer(tree))
    out = pathlib.Path(out or target.patches)
    work = pathlib.Path(tempfile.mkdtemp(prefix="novaseries-export-"))
    try:
        files = _format_patch(tree, f"{start}..HEAD", work / "raw")
        if not files:
            raise HarnessError(f"{tree} has no commits above its {target.below_names()} "
                               "patches: nothing to export")
        if bugs or author:
            files = _rewrite(tree, files, bugs or {}, author, work / "final", start)
        add_trailers(files, trailers)
        if bugs:
            warn_placeholders(files, placeholders_known)
        names = _sync(files, out)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    say(f"export: {len(names)} patches -> {out}/series")
    return names


def _sync(files, out):
    """Copy ``files`` into ``out`` (only when bytes differ), drop patches the
    old ``series`` listed that are gone, and write the new ``series``."""
    out.mkdir(parents=True, exist_ok=True)
    series = out / "series"
    old = []
    if series.is_file():
        old = target_model.series_names(series.read_text())
    names = [f.name for f in files]
    for path in files:
        dest = out / path.name
        data = path.read_bytes()
        if not dest.is_file() or dest.read_bytes() != data:
            dest.write_bytes(data)
    for name in old:
        if name not in names and (out / name).is_file():
            os.remove(out / name)
    text = "".join(f"{n}\n" for n in names)
    if not series.is_file() or series.read_text() != text:
        series.write_text(text)
    strays = sorted(p.name for p in out.glob("*.patch") if p.name not in names)
    if strays:
        say(f"export: note: {out} also holds patches not in the series: {', '.join(strays)}")
    return names
