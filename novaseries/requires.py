"""The refusal of a folder whose change requires changes that its target
does not stack on (``export``, a release's packaged stack)."""


def not_stacked_on(whose, missing, stacker="it"):
    """The refusal's text: ``<whose> requires <change> (<folder>), ...,
    which <stacker> does not stack on``.

    :param missing: ``[(change, folder), ...]``, as
        :func:`novaseries.targets.requirements_missing` returns them.
    """
    return (f"{whose} requires " + ", ".join(f"{name} ({folder})" for name, folder in missing)
            + f", which {stacker} does not stack on")
