"""The tests' Ironic REST client: :class:`novaseries.ironic_rest.Client`
(enrols nodes, moves them and reads them back; what the tests compare goes
through openstacksdk, as Nova's driver does)."""

from novaseries.ironic_rest import Client  # noqa: F401
