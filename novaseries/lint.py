"""Commit-message lint following Nova's conventions.

Errors: summary longer than :data:`MAX` characters or empty, no blank line
after the summary, body lines longer than :data:`MAX` columns (a line that is a URL or a
single unbreakable word is allowed), non-ASCII text, no ``Change-Id:
I<40 hex>`` footer in the last paragraph, no ``Closes-Bug:`` /
``Related-Bug:`` footer, a ``Signed-off-by:`` (the submitter adds it).
Warnings: summary longer than :data:`SUMMARY_SOFT` characters, summary
ending with a period.
"""

import re

#: A summary's length Nova asks for (longer is a warning).
SUMMARY_SOFT = 50
#: A summary's and a body line's greatest length (longer is an error).
MAX = 72
#: A Gerrit Change-Id: ``I`` and 40 hex digits.
CHANGE_ID_VALUE = r"I[0-9a-f]{40}"
#: A ``Change-Id:`` footer line (group 1: its Change-Id).
CHANGE_ID = re.compile(rf"^Change-Id: ({CHANGE_ID_VALUE})$", re.M)
#: The keys of the bug footers (OpenStack's), a regex alternation.
BUG_KEYS = r"(?:Closes|Related|Partial)-Bug"
#: A bug footer as lint requires it: its key, one space, one bug number
#: or placeholder (``#`` optional).
BUG = re.compile(rf"^{BUG_KEYS}: #?[0-9A-Z]+$")
#: A bug footer as read for its bugs (any case, any spacing; group 1: the
#: comma- or space-separated values).
BUG_FOOTER = re.compile(rf"^{BUG_KEYS}:[ \t]*(.*)$", re.M | re.I)


def _long_line_allowed(line):
    """URLs and single words cannot be wrapped."""
    stripped = line.strip()
    return "://" in stripped or " " not in stripped


def lint_message(message):
    """Lint one commit message; return ``(errors, warnings)`` (lists of str)."""
    errors, warnings = [], []
    lines = message.rstrip("\n").split("\n")
    summary = lines[0] if lines else ""
    if not summary.strip():
        errors.append("empty summary line")
    elif len(summary) > MAX:
        errors.append(f"summary is {len(summary)} characters (max {MAX})")
    elif len(summary) > SUMMARY_SOFT:
        warnings.append(f"summary is {len(summary)} characters (aim for {SUMMARY_SOFT})")
    if summary.startswith("["):
        errors.append("summary starts with '[': git am would strip it on the next "
                      "prepare (write e.g. 'stable-only: ...' instead)")
    if summary.rstrip().endswith("."):
        warnings.append("summary ends with a period")
    if len(lines) > 1 and lines[1].strip():
        errors.append("line 2 must be blank (summary, blank line, body)")
    for number, line in enumerate(lines[1:], start=2):
        if len(line) > MAX and not _long_line_allowed(line):
            errors.append(f"line {number} is {len(line)} columns (max {MAX})")
    for number, line in enumerate(lines, start=1):
        if not line.isascii():
            bad = "".join(sorted({c for c in line if not c.isascii()}))
            errors.append(f"line {number} has non-ASCII characters: {bad!r}")
    paragraphs = [p for p in "\n".join(lines).split("\n\n") if p.strip()]
    footer = paragraphs[-1].split("\n") if len(paragraphs) > 1 else []
    if not any(CHANGE_ID.match(line) for line in footer):
        if any(line.startswith("Change-Id:") for line in lines):
            errors.append("Change-Id must be 'Change-Id: I<40 hex>' in the last paragraph")
        else:
            errors.append("no 'Change-Id: I<40 hex>' footer")
    if not any(BUG.match(line) for line in footer):
        errors.append("no 'Closes-Bug: #N' or 'Related-Bug: #N' footer in the last paragraph")
    if any(line.lower().startswith("signed-off-by:") for line in lines):
        errors.append("Signed-off-by: found; the submitter adds it (export --signoff)")
    return errors, warnings


def lint_series(messages):
    """Lint several messages (``[(name, message)]``): also no Change-Id twice.

    Returns ``{name: (errors, warnings)}``.
    """
    results, seen = {}, {}
    for name, message in messages:
        errors, warnings = lint_message(message)
        for line in message.split("\n"):
            if CHANGE_ID.match(line):
                if line in seen:
                    errors.append(f"same Change-Id as {seen[line]}")
                seen.setdefault(line, name)
        results[name] = (errors, warnings)
    return results
