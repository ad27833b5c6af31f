"""The main job's scenarios, in two parts that run in two places.

In the harness (standard library only): the table (``scenario_table``, its
checks in ``checks``) and the benchmark's specs (``bench_table``), which
the harness imports to judge and list; ``real_backend`` and
``request_log`` (the real-Ironic binding and its request recording) are
imported by the harness too (``mainjob.backends``) and import Nova only
inside the player.

Inside a Nova tree, with Nova's venv: the scenario player, ``python -m
novaseries.scenarios.play`` (``play``; ``play_fake`` against the fake
Ironic, with ``play_kinds``, each kind's start, and ``play_record``, the
observation; ``play_real`` against a real one, ``play_bench`` the
benchmark, ``watch`` what the builds do); these import Nova and the
harness never imports them.
"""
