"""The main job's scenarios: the table (``scenario_table``, its checks in
``checks``; standard library only, imported by the harness too) and the
scenario player that plays them inside a Nova tree with Nova's venv
(``python -m novaseries.scenarios.play``; its modules import Nova and are
never imported by the harness: ``play``, ``play_fake``,
``play_real``, ``play_bench``, ``watch``, ``real_backend``,
``request_log``)."""
