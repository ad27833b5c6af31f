"""Download (pip), verify (sha256) and extract the Nova sdist.

Nothing is extracted from a file whose digest differs from the target's:
a corrupt, truncated or substituted download is refused with both digests.
"""

import os
import pathlib
import shlex
import shutil
import sys
import tarfile
import tempfile

from novaseries.util import HarnessError, run, say, sha256_file


def pip_download(version, dest):
    """Download ``nova==version`` as an sdist into ``dest`` with pip.

    Extra pip arguments (e.g. ``--no-index --find-links DIR``) can be given in
    $NOVASERIES_PIP_DOWNLOAD_ARGS.
    """
    extra = shlex.split(os.environ.get("NOVASERIES_PIP_DOWNLOAD_ARGS", ""))
    run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
         "--disable-pip-version-check", *extra, f"nova=={version}", "-d", dest])


def _mismatch(path, expected, actual, hint):
    return HarnessError(
        f"sha256 mismatch for {path}: refusing to use it (nothing extracted)",
        f"  expected: {expected}\n  actual:   {actual}\n  {hint}")


def fetch(target, cache, downloader=pip_download):
    """Return the path of the verified sdist of ``target`` in ``cache``.

    A file already in the cache is checked, never replaced silently.  A new
    download goes to a temporary folder first and only enters the cache once
    its digest matches.  ``downloader(version, folder)`` is injectable (tests).
    """
    cache = pathlib.Path(cache)
    cache.mkdir(parents=True, exist_ok=True)
    cached = cache / target.sdist_name
    if cached.exists():
        actual = sha256_file(cached)
        if actual != target.sha256:
            raise _mismatch(cached, target.sha256, actual,
                            "the cached file is corrupt or not the release; delete it to "
                            "download again")
        say(f"sdist: {cached} (cached, sha256 ok)")
        return cached
    say(f"sdist: downloading nova=={target.version} with pip")
    with tempfile.TemporaryDirectory(prefix=".download-", dir=cache) as tmp:
        downloader(target.version, tmp)
        got = pathlib.Path(tmp) / target.sdist_name
        if not got.is_file():
            found = ", ".join(sorted(os.listdir(tmp))) or "nothing"
            raise HarnessError(f"pip did not produce {target.sdist_name} (got: {found})")
        actual = sha256_file(got)
        if actual != target.sha256:
            raise _mismatch(f"the download of {target.sdist_name}", target.sha256, actual,
                            "the download is truncated, corrupt or not the release; "
                            "it was discarded")
        os.replace(got, cached)
    say(f"sdist: {cached} (sha256 ok)")
    return cached


def extract(sdist, dest):
    """Extract the sdist's single top folder as ``dest`` (which must not exist).

    Uses tarfile's "data" filter: no absolute paths or links out of the tree,
    no ownership from the archive.  On any error nothing is left at ``dest``.
    """
    dest = pathlib.Path(dest)
    if dest.exists():
        raise HarnessError(f"{dest} already exists")
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = pathlib.Path(tempfile.mkdtemp(prefix=f".{dest.name}-extract-", dir=dest.parent))
    try:
        try:
            with tarfile.open(sdist, "r:gz") as tar:
                tops = {m.name.split("/", 1)[0] for m in tar.getmembers()}
                if len(tops) != 1:
                    raise HarnessError(f"{sdist}: expected one top-level folder, got "
                                       f"{', '.join(sorted(tops))}")
                tar.extractall(tmp, filter="data")
        except (tarfile.TarError, EOFError, OSError) as exc:
            raise HarnessError(f"{sdist}: cannot extract: {exc}")
        os.rename(tmp / tops.pop(), dest)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
