"""``quilt``: a release's packaged stack as one quilt series for packagers.

Every patch of every folder of the stack (:func:`novaseries.targets.
packaged_stack`), in order, becomes one file named ``NNNN-<folder>-<its
name>`` (``NNNN``: its place in the whole stack; ``<folder>``:
:func:`folder_label`) that starts with DEP-3 headers
(https://dep-team.pages.debian.net/deps/dep3/) built from the
format-patch's own headers and message, then a ``---`` line and the rest
of the folder's file byte for byte (diffstat and diff): the tree it gives
is the tree ``git am`` of the folders gives.  :func:`check` proves that
on the release's sdist with ``patch -p1`` and, where dpkg-source is
installed, with a ``3.0 (quilt)`` source package.
"""

import dataclasses
import email.parser
import email.policy
import email.utils
import hashlib
import os
import pathlib
import re
import secrets
import shutil
import tempfile

from novaseries import export, lint, sdist as sdist_mod, tree as tree_mod
from novaseries.util import HarnessError, LOG, git, run, say

#: Where a Launchpad bug number of a ``*-Bug:`` footer points.
BUG_URL = "https://bugs.launchpad.net/nova/+bug/{}"

#: The label of a release's own folder (``patches/<release>``): the
#: teardown fix (patches/README.rst).
RELEASE_FOLDER_LABEL = "teardown"

#: What the check runs for each patch (quilt's and dpkg-source's own way:
#: no fuzz; no ``.orig`` file is left).
PATCH = ("patch", "-p1", "--fuzz=0", "--no-backup-if-mismatch", "--quiet")


@dataclasses.dataclass(frozen=True)
class FormatPatch:
    """What a ``git format-patch`` file says: ``subject`` (without
    ``[PATCH]``), ``body`` (the rest of the message, footer included, no
    trailing newline), ``author`` (``Name <email>``), ``date`` (the
    author date, its own time zone), ``change_id`` (the last
    ``Change-Id:`` of the message, or None) and ``tail``: the bytes after
    the message's ``---`` line (diffstat and diff), as in the file."""

    path: pathlib.Path
    subject: str
    body: str
    author: str
    date: str
    change_id: str
    tail: bytes


def read_format_patch(path, data=None):
    """The :class:`FormatPatch` of the file at ``path`` (``data``: its
    bytes, when the caller has read them).

    :raises HarnessError: not a git format-patch file (headers, a blank
        line, the message, a ``---`` line, the diff), or one whose message
        is not 8-bit UTF-8.
    """
    path = pathlib.Path(path)
    data = path.read_bytes() if data is None else data
    head, sep, rest = data.partition(b"\n\n")
    headers = email.parser.BytesHeaderParser(policy=email.policy.default).parsebytes(
        head + b"\n")
    if not sep or not all(headers[h] for h in ("From", "Date", "Subject")):
        raise HarnessError(f"{path}: not a git format-patch file (From:, Date: and "
                           "Subject: headers, then a blank line)")
    if str(headers["Content-Transfer-Encoding"] or "8bit").lower() not in ("7bit", "8bit"):
        raise HarnessError(f"{path}: its message is {headers['Content-Transfer-Encoding']}-"
                           "encoded; expected git format-patch's 8bit")
    padded = b"\n" + rest
    end = padded.find(b"\n---\n")
    tail = padded[end + 5:] if end >= 0 else b""
    if end < 0 or not re.search(rb"^(diff --git |--- )", tail, re.M):
        raise HarnessError(f"{path}: no '---' line then a diff after its message")
    try:
        body = padded[1:end].decode("utf-8") if end > 0 else ""
        address = headers["From"].addresses[0]
    except (UnicodeDecodeError, IndexError, AttributeError) as exc:
        raise HarnessError(f"{path}: cannot read its message or author ({exc})") from None
    author = (f"{address.display_name} <{address.addr_spec}>" if address.display_name
              else address.addr_spec)
    try:
        date = email.utils.parsedate_to_datetime(str(headers["Date"])).date().isoformat()
    except (TypeError, ValueError):
        raise HarnessError(f"{path}: Date: {headers['Date']!r} is not a date") from None
    subject = re.sub(r"^\[PATCH[^\]]*\]\s*", "", str(headers["Subject"]))
    change_ids = lint.CHANGE_ID.findall(body)
    return FormatPatch(path, subject, body.rstrip(), author, date,
                       change_ids[-1] if change_ids else None, tail)


def bug_numbers(message):
    """The bug values of ``message``'s ``Closes-Bug:``, ``Partial-Bug:`` and
    ``Related-Bug:`` footers, in order, once each, without ``#``: numbers
    or placeholders (``NNNNNNN``)."""
    found = []
    for value in lint.BUG_FOOTER.findall(message):
        found += [v.lstrip("#") for v in re.split(r"[,\s]+", value) if v.lstrip("#")]
    return list(dict.fromkeys(found))


def empty_new_files(tail):
    """The files a format-patch diff (``tail``) creates empty (a ``new
    file`` block with no hunk): ``patch -E``, as dpkg-source applies a
    ``3.0 (quilt)`` series, leaves them out."""
    found = []
    for block in re.split(rb"^(?=diff --git )", tail, flags=re.M):
        head = re.match(rb"diff --git a/(\S+) b/", block)
        if head and re.search(rb"^new file mode ", block, re.M) and \
                not re.search(rb"^@@ ", block, re.M) and b"GIT binary patch" not in block:
            found.append(head.group(1).decode("utf-8", "replace"))
    return found


def description(subject, body):
    """DEP-3's ``Description:`` field: the subject, then the body as its
    long description, each line indented by one space, an empty line as
    ``" ."``."""
    lines = [f"Description: {subject}"]
    if body.strip():
        lines += [f" {line}" if line.strip() else " ." for line in body.strip("\n").split("\n")]
    return "\n".join(lines)


def dep3(patch, bugs=None, forwarded=None):
    """``(bytes, placeholders)``: the quilt patch of :class:`FormatPatch`
    ``patch``: DEP-3 headers (``Description``, ``Author``, one ``Bug`` per
    bug number, ``Forwarded``, ``Last-Update``), a ``---`` line, then its
    ``tail`` (the diff).

    ``bugs``: ``{placeholder: number}`` (:func:`novaseries.export.parse_bugs`)
    replaced everywhere, as ``export --bug`` does: the subject, the
    message and the diff (file names, renos' bug links); ``forwarded``: ``{Change-Id: URL}``
    (``Forwarded: <URL>``; else ``Forwarded: no``).  ``placeholders``: the
    bug values left that are not numbers (no ``Bug`` header for them).
    """
    bugs = bugs or {}
    subject = export.substitute(patch.subject, bugs)
    body = export.substitute(patch.body, bugs)
    values = bug_numbers(body)
    lines = [description(subject, body), f"Author: {patch.author}"]
    lines += [f"Bug: {BUG_URL.format(v)}" for v in values if v.isdigit()]
    lines += [f"Forwarded: {(forwarded or {}).get(patch.change_id) or 'no'}",
              f"Last-Update: {patch.date}", "---", ""]
    return ("\n".join(lines).encode() + export.substitute_bytes(patch.tail, bugs),
            [v for v in values if not v.isdigit()])


def folder_label(root, folder, release):
    """The ``<folder>`` part of a quilt patch's name: the folder's path
    under ``patches/`` without the release, ``/`` as ``-``
    (``patches/deletebuild/on-teardown/master`` -> ``deletebuild-on-teardown``);
    the release's own folder (``patches/<release>``) is
    :data:`RELEASE_FOLDER_LABEL`."""
    folder = pathlib.Path(folder)
    try:
        parts = folder.relative_to(pathlib.Path(root) / "patches").parts
    except ValueError:
        parts = folder.parts[-1:]
    parts = [p for p in parts if p != release]
    label = "-".join(parts) or RELEASE_FOLDER_LABEL
    return re.sub(r"[^A-Za-z0-9._-]+", "-", label)


def parse_forwarded(values):
    """``["I<40 hex>=https://review.opendev.org/c/...", ...]`` (``--forwarded``)
    -> ``{Change-Id: URL}``.

    :raises HarnessError: not a Change-Id, ``=`` and an http(s) URL.
    """
    mapping = {}
    for value in values or ():
        change, sep, url = value.partition("=")
        if not sep or not re.fullmatch(lint.CHANGE_ID_VALUE, change) or \
                not re.fullmatch(r"https?://\S+", url):
            raise HarnessError(f"--forwarded {value!r}: expected CHANGE-ID=URL (a Change-Id, "
                               "I and 40 hex digits; an http(s) URL: its Gerrit review)")
        mapping[change] = url
    return mapping


@dataclasses.dataclass(frozen=True)
class Entry:
    """One patch of the quilt series: ``name`` (in ``series``), ``source``
    (the folder's file), ``data`` (the bytes written)."""

    name: str
    source: pathlib.Path
    data: bytes


def build(root, stack, bugs=None, forwarded=None, known=None):
    """The :class:`Entry` list of :class:`~novaseries.targets.PackagedStack`
    ``stack``, in order; a warning for each bug placeholder left (``known``:
    ``{name: placeholder}`` of targets.toml ``[bugs]``, to name its
    ``--bug``).

    :raises HarnessError: a patch is not a format-patch file, or a
        ``forwarded`` Change-Id is in no patch of the stack.
    """
    entries, left, change_ids, empty = [], {}, set(), []
    number, used = 0, set()
    for folder, patches in stack.series():
        label = folder_label(root, folder, stack.release)
        for path in patches:
            number += 1
            raw = path.read_bytes()
            patch = read_format_patch(path, raw)
            used |= {v for v in (bugs or {}) if v.encode() in raw or v in path.name}
            change_ids.add(patch.change_id)
            data, placeholders = dep3(patch, bugs, forwarded)
            name = f"{number:04d}-{label}-{export.substitute(path.name, bugs or {})}"
            entries.append(Entry(name, path, data))
            empty += [(name, f) for f in empty_new_files(patch.tail)]
            for value in dict.fromkeys([*placeholders, *(
                    v for v in (known or {}).values() if v.encode() in data)]):
                left.setdefault(value, []).append(name)
    unknown = sorted(set(forwarded or ()) - change_ids)
    if unknown:
        raise HarnessError(f"--forwarded: no patch of {stack.release}'s stack has Change-Id "
                           f"{', '.join(unknown)}")
    names = {v: k for k, v in (known or {}).items()}
    for value in sorted(set(bugs or {}) - used):
        LOG.warning(f"warning: --bug {names.get(value, value)}=...: no patch of "
                    f"{stack.release}'s stack carries {value} (that bug's fix is not in it)")
    export.warn_placeholders_left(left, known, cost="no Bug: header for it; ")
    for name, path in empty:
        LOG.warning(f"warning: {name} creates the empty file {path}, which a 3.0 "
                    "(quilt) package lacks (dpkg-source applies patches with patch -E): "
                    "touch it in debian/rules before the build and the tests")
    return entries


def refuse_out(out):
    """HarnessError unless ``out`` is missing or an empty folder."""
    out = pathlib.Path(out)
    if out.exists() and not (out.is_dir() and not any(out.iterdir())):
        raise HarnessError(f"--out {out} exists and is not an empty folder; refusing to "
                           "write there (nothing was changed)")


def write(entries, out, verify=None):
    """Write ``entries`` and their ``series`` into the new folder ``out``
    (missing, or an empty folder): into a folder beside it first, which
    ``verify(folder)`` (if given) checks, then renamed to ``out``.  On any
    failure nothing is left at ``out`` but what was there.  Returns
    ``out``."""
    out = pathlib.Path(out).absolute()
    refuse_out(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    work = out.parent / f".{out.name}.quilt-{os.getpid()}-{secrets.token_hex(4)}"
    os.mkdir(work)  # (the umask's mode, as out would have)
    try:
        for entry in entries:
            (work / entry.name).write_bytes(entry.data)
        (work / "series").write_text("".join(f"{e.name}\n" for e in entries))
        if verify:
            verify(work)
        refuse_out(out)
        if out.exists():
            out.rmdir()
        os.rename(work, out)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out


def series_names(folder):
    """The patch names of ``folder``'s ``series`` file, in order."""
    return [line.split()[0] for line in (pathlib.Path(folder) / "series").read_text().splitlines()
            if line.strip() and not line.startswith("#")]


def apply_with_patch(folder, dest):
    """Apply ``folder``'s series in ``dest`` with :data:`PATCH`.

    :raises HarnessError: naming the patch that does not apply, with
        patch's output.
    """
    for name in series_names(folder):
        proc = run([*PATCH, "-d", dest, "-i", pathlib.Path(folder) / name], check=False)
        if proc.returncode:
            raise HarnessError(f"quilt check: {name} does not apply with {' '.join(PATCH)}",
                               (proc.stdout + proc.stderr).strip())


def blob_id(data):
    """git's object id of a blob holding ``data``."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


#: git's object id of an empty file.
EMPTY_BLOB = blob_id(b"")


def folder_entries(folder, skip=()):
    """``{path: (mode, blob id)}`` of the files and symlinks under ``folder``
    as git would record them (mode 100644, 100755 or 120000); the
    top-level names ``skip`` are left out."""
    folder = pathlib.Path(folder)
    found = {}
    for top, dirs, files in os.walk(folder):
        here = pathlib.Path(top)
        if here == folder:
            dirs[:] = [d for d in dirs if d not in skip]
            files = [f for f in files if f not in skip]
        for name in files + [d for d in dirs if (here / d).is_symlink()]:
            path = here / name
            rel = path.relative_to(folder).as_posix()
            if path.is_symlink():
                found[rel] = ("120000", blob_id(os.fsencode(os.readlink(path))))
            else:
                mode = "100755" if path.stat().st_mode & 0o100 else "100644"
                found[rel] = (mode, blob_id(path.read_bytes()))
    return found


def tree_entries(repo, rev):
    """``{path: (mode, blob id)}`` of commit ``rev`` of ``repo``."""
    found = {}
    for record in git(repo, "ls-tree", "-r", "-z", "--full-tree", rev).split("\0"):
        if record:
            meta, path = record.split("\t", 1)
            mode, _, oid = meta.split()
            found[path] = (mode, oid)
    return found


def differences(got, want):
    """The paths where ``got`` and ``want`` (:func:`folder_entries`,
    :func:`tree_entries`) differ, each with how: sorted lines."""
    lines = []
    for path in sorted(set(got) | set(want)):
        if path not in want:
            lines.append(f"only in the quilt tree: {path}")
        elif path not in got:
            lines.append(f"missing from the quilt tree: {path}")
        elif got[path] != want[path]:
            what = "content" if got[path][1] != want[path][1] else "mode"
            lines.append(f"{what} differs: {path}")
    return lines


def compare(folder, repo, rev, what, skip=()):
    """HarnessError unless ``folder`` holds exactly the files of ``rev``."""
    diff = differences(folder_entries(folder, skip), tree_entries(repo, rev))
    if diff:
        raise HarnessError(f"quilt check: {what} differs from the tree git am of the folders "
                           f"gives ({len(diff)} files)", "\n".join(diff[:40]))


#: The minimal debian/ of the check's ``3.0 (quilt)`` source package.
DEBIAN = {
    "source/format": "3.0 (quilt)\n",
    "control": "Source: nova\nMaintainer: novaseries quilt check <novaseries@localhost>\n"
               "\nPackage: python3-nova\nArchitecture: all\n"
               "Description: nova (novaseries quilt check)\n"
               " A source package that only proves the quilt series builds and extracts.\n",
    "changelog": "nova ({version}-1) UNRELEASED; urgency=medium\n\n"
                 "  * novaseries quilt check.\n\n"
                 " -- novaseries quilt check <novaseries@localhost>  "
                 "Sat, 01 Jan 2000 00:00:00 +0000\n",
    "rules": "#!/usr/bin/make -f\n%:\n\tdh $@\n",
}


def dpkg_source_check(folder, sdist, version, work, repo, rev):
    """Build a ``3.0 (quilt)`` source package of the sdist (the orig
    tarball) with ``folder`` as debian/patches (``dpkg-source -b``),
    extract it (``dpkg-source -x``, which applies the series) and compare
    the result, without debian/ and .pc/, with ``rev``.

    Returns the empty files the series creates that the extraction lacks:
    dpkg-source applies with ``patch -E``, which removes them (its own
    warning: "newly created empty file ... will not be represented").

    :raises HarnessError: dpkg-source fails, or another difference.
    """
    package = work / f"nova-{version}"
    sdist_mod.extract(sdist, package)
    for name, text in DEBIAN.items():
        path = package / "debian" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text.format(version=version))
    (package / "debian" / "rules").chmod(0o755)
    shutil.copytree(folder, package / "debian" / "patches")
    os.symlink(sdist, work / f"nova_{version}.orig.tar.gz")
    env = dict(os.environ, LC_ALL="C")
    run(["dpkg-source", "-b", package.name], cwd=work, env=env)
    run(["dpkg-source", "-x", f"nova_{version}-1.dsc", "extracted"], cwd=work, env=env)
    got = folder_entries(work / "extracted", skip=("debian", ".pc"))
    want = tree_entries(repo, rev)
    dropped = sorted(p for p, (_, oid) in want.items() if p not in got and oid == EMPTY_BLOB)
    diff = differences({**got, **{p: want[p] for p in dropped}}, want)
    if diff:
        raise HarnessError(f"quilt check: dpkg-source -x's tree differs from the tree git am "
                           f"of the folders gives ({len(diff)} files)", "\n".join(diff[:40]))
    return dropped


def folders(stack):
    """``N folders`` (``1 folder``) of ``stack``, for messages."""
    return f"{len(stack.folders)} folder{'' if len(stack.folders) == 1 else 's'}"


def check(ctx, stack, folder, bugs=None):
    """Prove the quilt series in ``folder`` on ``stack``'s sdist (fetched and
    sha256-checked into the sdist cache): applied with :data:`PATCH` to a
    fresh extraction, and, where dpkg-source is installed, as a ``3.0
    (quilt)`` source package built and extracted, it gives the tree
    ``git am`` of the folders gives (prepared in a temporary folder; with
    ``bugs``, of the folders' patches with the same placeholders replaced).
    Returns what was checked, lines to print.

    :raises HarnessError: a patch does not apply, or a tree differs.
    """
    target = stack.target
    sdist = sdist_mod.fetch(target, ctx.sdist_cache)
    work = pathlib.Path(tempfile.mkdtemp(prefix="novaseries-quilt-check-"))
    try:
        reference = work / "git-am"
        tree_mod.create_base(target, reference, ctx.sdist_cache)
        patches = [path for _, paths in stack.series() for path in paths]
        if bugs:
            (work / "substituted").mkdir()
            for i, path in enumerate(list(patches)):
                patches[i] = work / "substituted" / f"{i:04d}.patch"
                patches[i].write_bytes(export.substitute_bytes(path.read_bytes(), bugs))
        tree_mod.apply_series(reference, patches)
        applied = work / "patch" / f"nova-{target.version}"
        sdist_mod.extract(sdist, applied)
        apply_with_patch(folder, applied)
        compare(applied, reference, "HEAD", f"{' '.join(PATCH[:4])}'s tree")
        count = len(series_names(folder))
        lines = [f"check: {count} patches applied with {' '.join(PATCH[:4])} to nova "
                 f"{target.version}'s sdist: the tree git am of the {folders(stack)} gives"]
        if shutil.which("dpkg-source"):
            dropped = dpkg_source_check(folder, sdist, target.version, work / "deb",
                                        reference, "HEAD")
            lines.append(f"check: a 3.0 (quilt) source package nova_{target.version}-1 with "
                         "the series as debian/patches builds (dpkg-source -b) and extracts "
                         "(dpkg-source -x) to the same tree"
                         + (f", but for the empty file(s) it leaves out (patch -E): "
                            f"{', '.join(dropped)}" if dropped else ""))
        else:
            lines.append("check: dpkg-source not found: the 3.0 (quilt) package was not tried")
        return lines
    finally:
        shutil.rmtree(work, ignore_errors=True)


def quilt(ctx, stack, out, bugs=None, forwarded=None, known=None, verify=False):
    """Write ``stack`` as one quilt series into ``out`` (:func:`build`,
    :func:`write`); with ``verify``, :func:`check` it before it lands
    there.  Returns ``(entries, the check's lines)``."""
    refuse_out(out)
    entries = build(ctx.root, stack, bugs, forwarded, known)
    lines = []
    write(entries, out, (lambda folder: lines.extend(check(ctx, stack, folder, bugs)))
          if verify else None)
    say(f"quilt: {len(entries)} patches of {folders(stack)} -> {out}/series")
    return entries, lines
