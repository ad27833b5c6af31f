"""The main job's scenarios: the table (``scenario_table``, standard library
only) and the runner that plays them inside a Nova tree
(``nova_scenarios.py``, run as a script with the target's venv, never
imported by the harness)."""
