"""The scenario player, run inside a Nova tree with Nova's venv (``python
-m novaseries.nova_side.player.play``): ``play`` reads the command line
and writes the JSON; ``scenario_case`` plays a scenario (with
``play_kinds``, each kind's start, and ``play_record``, the observation),
``play_fake`` against the fake Ironic (``counting_ironic``: the fixture,
timed by reads), ``play_real`` against a real one (``novaseries.ironic.real_backend``);
``play_bench`` is the benchmark; ``watch`` watches what the builds do.
The scenarios come from :mod:`novaseries.scenarios.scenario_table`, their
vocabulary (kinds, actions) from :mod:`novaseries.scenarios.scenario`.
"""
