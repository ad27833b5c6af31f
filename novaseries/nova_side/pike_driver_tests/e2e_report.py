# -*- coding: utf-8 -*-
"""What the pike end-to-end tests (``test_pike_e2e``) print: the green
threads' stacks of a test that waited in vain, and the requests a driver
call sent.  Python 2.7 code, imported by bare name (this folder is the
run's top-level directory).
"""

import gc
import traceback

import greenlet


def green_stacks():
    """The stacks of every greenlet (eventlet runs the driver's threads as
    greenlets): what a test that waited in vain prints."""
    stacks = []
    for obj in gc.get_objects():
        if isinstance(obj, greenlet.greenlet) and obj.gr_frame is not None:
            stacks.append(''.join(traceback.format_stack(obj.gr_frame)))
    return '\n'.join(stacks) or '(none)'


def summary(sent):
    """``METHOD /path -> status`` per request, repeats folded."""
    out = []
    for method, path, status in sent:
        text = '%s %s -> %s' % (method, path, status)
        if out and out[-1][0] == text:
            out[-1][1] += 1
        else:
            out.append([text, 1])
    return ', '.join(t if n == 1 else '%s (x%d)' % (t, n) for t, n in out)
