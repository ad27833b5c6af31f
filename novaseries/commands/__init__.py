"""The ``novaseries`` subcommands, one module per command, named after it
(``check-commits`` is :mod:`check_commits`).

Each module has a docstring, ``HELP`` (one line: the command list and the
command's description), ``add_arguments(parser, ctx)``, ``run(ctx, args)
-> exit status`` and optionally ``EPILOG`` (text after the options).
:mod:`novaseries.cli` imports them by name (``cli.COMMANDS``) and builds
the parser; nothing else imports this package.  Shared argument specs and the
target lookup are in :mod:`common`; the summary every command ends with
is :func:`novaseries.outcomes.report`.
"""
