"""The scenario player, run inside a Nova tree with Nova's venv (``python
-m novaseries.nova_side.player.play``): ``play`` reads the command line
and writes the JSON; ``play_fake`` plays a scenario against the fake
Ironic (with ``play_kinds``, each kind's start, ``play_record``, the
observation, and ``counting_ironic``, the fixture's read counts);
``play_real`` against a real one (``novaseries.ironic.real_backend``);
``play_bench`` is the benchmark; ``watch`` watches what the builds do.
The scenarios come from :mod:`novaseries.scenarios.scenario_table`.
"""
