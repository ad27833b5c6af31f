"""The main job's scenarios: the table (``scenario_table``, its checks in
``checks``; standard library only, imported by the harness too) and the
scenario player that plays them inside a Nova tree with Nova's venv
(``python -m novaseries.scenarios.play``; its modules import Nova and are
never imported by the harness: ``play``, ``scenario_test``,
``real_scenario_test``, ``bench_test``, ``watch``, ``real_backend``,
``request_log``)."""
