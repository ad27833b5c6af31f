"""The main job's scenarios as data, standard library only: the table
(``scenario_table``), what a scenario is and the kinds and actions it
names (``scenario``: its rows, ``scenario.Scenario``), its checks
(``checks``, ``invariant``, ``outage_checks``, ``bounds`` and ``texts``)
and the benchmark's specs (``bench_table``).  The harness imports them to
judge and list; the scenario player (:mod:`novaseries.nova_side.player`)
imports them inside Nova's venv to know what to play.
"""
