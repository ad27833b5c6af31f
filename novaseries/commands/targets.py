"""``novaseries targets``: list the targets of targets/targets.toml, each
with its Nova version, interpreter, what it holds (its change, or its
release's packaged stack), whether it is enabled and the state of its
series (how many patches, or what is wrong with it)."""

from novaseries import targets as targets_mod

HELP = "list the targets and the state of their series"


def add_arguments(parser, ctx):
    """No options."""


def run(ctx, args):
    for name, target in targets_mod.load(ctx).items():
        patches, problem = target.series_status()
        state = "enabled" if target.enabled else f"not enabled: {target.note or '-'}"
        series = f"{len(patches)} patches" if patches else problem
        holds = "packaged stack" if target.stack else (target.change or "-")
        print(f"{name:18} nova {target.version:8} {target.interpreter:10} {holds:22} "
              f"{state}; {series}")
    return 0
