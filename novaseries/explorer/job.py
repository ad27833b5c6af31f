"""``novaseries explore``'s work: prepare the fixed tree (the packaged
stack of the target's release, as the main job's fixed tree; with a
mutation, a scratch copy of it mutated), then in each mode and for each
seed one search (``search.search``) with one serving player
(``player.ServingPlayer``), printing each case and each failure; write
the JSON (:func:`explore`); or play one case (:func:`replay`).
"""

import contextlib
import json
import time

from novaseries import mutations, targets as targets_mod, venvs
from novaseries import tree as tree_mod
from novaseries.explorer import generate, search as search_mod
from novaseries.explorer.player import ServingPlayer
from novaseries.mainjob.report import put, write_json
from novaseries.scenarios import explore_space, universal
from novaseries.util import HarnessError, file_lock, say

#: The explorer's folder: ``build/RESULTS`` (its tree, results and lock).
RESULTS = 'explore'
#: The JSON of the last run, in :data:`RESULTS`.
RUN_JSON = 'explore.json'
#: The fixed seeds CI explores, in every mode, and the cases of each
#: (``ci`` step ``explorer``; a seed's first cases are the same for any
#: number asked from 10 to 29: Hypothesis draws another order outside).
CI_SEEDS = (1, 2)
CI_CASES = 10
_DELETE_DURING_DEPLOYING = ('is locked by Ironic', (
    "a user's delete during a rebuild, or after an outage, meets the node in "
    "deploying past destroy()'s 409 retries (filed: doc/main-job.rst, The "
    "explorer, What it found)"))
_STALE_SAVE_OVER_DELETE = ('by _cleanup_allocated_networks', (
    "the build's clean-up after its refused spawn save writes that save's "
    "vm_state ACTIVE over the user's delete (Nova's compute manager; filed: "
    "doc/main-job.rst, The explorer, What it found)"))
#: The failures of defects found and filed but not fixed, by ``(seed,
#: rule)`` -> ``(sign, where it is filed)``, the sign a text that the
#: failure's problems or its server's fault show (:func:`filed_as`): such
#: a failure is printed as expected and fails neither ``explore`` nor
#: CI's step.
EXPECTED = {
    (17, 'delete'): _DELETE_DURING_DEPLOYING,
    (76, 'delete'): _DELETE_DURING_DEPLOYING,
    (12, 'delete'): _DELETE_DURING_DEPLOYING,
    (4, 'deleting'): _STALE_SAVE_OVER_DELETE,
}


def filed_as(failure):
    """Where the failure's defect is filed: :data:`EXPECTED`'s entry for
    its seed and rule, if the entry's sign is in one of its problems or
    in its server's fault; else None."""
    sign, where = EXPECTED.get((failure.seed, failure.rule), (None, None))
    seen = [text for _, text in failure.problems] + [
        (failure.obs or {}).get('fault') or '']
    return where if sign and any(sign in text for text in seen) else None


@contextlib.contextmanager
def explore_tree(ctx, target, mutation=None):
    """The tree the explorer plays in: ``build/explore/tree``, the packaged
    stack of ``target``'s release (``targets.stack_target``), prepared
    anew; with ``mutation`` (a name of ``mutations.MUTATIONS``) a scratch
    worktree of it with the mutation applied (removed after).  Holds
    ``build/explore/explore.lock`` meanwhile: one explorer at a time."""
    stack = targets_mod.stack_target(ctx, target.release)
    base = ctx.build / RESULTS
    base.mkdir(parents=True, exist_ok=True)
    with file_lock(base / 'explore.lock', 'the explorer (build/explore)'):
        tree = tree_mod.prepare(ctx, stack, base / 'tree', force=True)
        if mutation is None:
            yield tree
            return
        with tree_mod.scratch_worktree(tree, 'HEAD') as work:
            for name, line in mutations.apply(work, mutations.get(mutation)):
                say(f"mutation {mutation}: line {line} ({name})")
            yield work


def _player(ctx, target, venv, tree, mode):
    """The serving player of ``mode`` in ``tree``, its cases and log in
    ``build/explore``."""
    out = ctx.build / RESULTS
    return ServingPlayer(targets_mod.mode_target(target, mode), venv, tree,
                         out / 'cases', out / f"player.{mode}.log")


def _progress(mode, seed, cases):
    def progress(number, case, problems):
        verdict = 'ok' if not problems else 'FAILS ' + problems[0][0]
        put(f"  [explore {mode} seed {seed} {number}/{cases}+] "
            f"{search_mod.describe(case)}: {verdict}")
    return progress


def explore(ctx, target_name, seeds, cases, modes, mutation=None,
            shrink_cases=search_mod.SHRINK_CASES, json_out=None):
    """Explore: in each of ``modes``, ``cases`` cases of each seed of
    ``seeds``; print each case and each failure (its rule, its minimal
    case, the command that replays it and the main-job scenario that
    keeps it) and a summary line per mode.

    :returns: ``(failures, results)``: the failures (``search.Failure``,
        each with its ``mode``) and ``{mode: {seed: search.Searched}}``.
    :raises HarnessError: Hypothesis is not installed.
    """
    generate.need_hypothesis()
    target = targets_mod.get(ctx, target_name)
    venv, _ = venvs.ensure_venv(ctx, target)
    results, failures = {}, []
    try:
        _explore(ctx, target, target_name, venv, seeds, cases, modes, mutation,
                 shrink_cases, results, failures)
    finally:
        # (also what an interrupted run played)
        write_json(json_out or ctx.build / RESULTS / RUN_JSON,
                   _json(results, failures, mutation))
    return failures, results


def _explore(ctx, target, target_name, venv, seeds, cases, modes, mutation,
             shrink_cases, results, failures):
    with explore_tree(ctx, target, mutation) as tree:
        for mode in modes:
            results[mode] = {}
            start = time.monotonic()
            with _player(ctx, target, venv, tree, mode) as player:
                for seed in seeds:
                    found = search_mod.search(
                        lambda case: player.play(f"explore-{seed}", case),
                        seed, cases, shrink_cases,
                        _progress(mode, seed, cases))
                    results[mode][seed] = found
                    for failure in found.failures:
                        failure.mode = mode
                        failure.expected = None if mutation else filed_as(
                            failure)
                        failures.append(failure)
                        _print_failure(failure, target_name, mutation)
            found = results[mode].values()
            generated = sum(len(f.generated) for f in found)
            put(f"explore {mode} mode: {generated} cases generated ({len(seeds)} "
                f"seed(s)), {len({k for f in found for k in f.generated})} "
                f"distinct schedules, "
                f"{sum(1 for f in found for k in f.generated if f.played[k][1])} "
                f"broke a rule; {sum(len(f.played) for f in found) - generated} "
                f"more played shrinking; "
                f"{sum(len(f.failures) for f in found)} failure(s); "
                f"{time.monotonic() - start:.0f} s")


def replay_command(failure, target_name, mutation):
    """The command that plays the failure's minimal case again."""
    return (f"python3 -m novaseries explore --target {target_name} --mode "
            f"{failure.mode} --replay '{json.dumps(failure.case)}'"
            + (f" --mutation {mutation}" if mutation else ""))


def unexpected(failures):
    """The failures not listed in :data:`EXPECTED`."""
    return [f for f in failures if not f.expected]


def _print_failure(failure, target_name, mutation):
    head = (f"EXPECTED FAILURE ({failure.expected})" if failure.expected
            else "FAILURE")
    put(f"{head} ({failure.mode} mode, seed {failure.seed}): rule "
        f"{failure.rule}: {universal.rule_text(failure.rule)}")
    put(f"  minimal case: {search_mod.describe(failure.case)}")
    for rule, text in failure.problems:
        put(f"  {rule}: {text}")
    put(f"  replay: {replay_command(failure, target_name, mutation)}")
    put("  as a main-job scenario (scenario_table.py; write its checks):")
    for line in search_mod.scenario_source(failure).splitlines():
        put(f"    {line}")


def _json(results, failures, mutation):
    return {
        'mutation': mutation,
        'modes': {mode: {str(seed): {
            'cases': [{'case': case, 'problems': problems,
                       'generated': k in found.generated}
                      for k, (case, problems) in found.played.items()]}
            for seed, found in by_seed.items()}
            for mode, by_seed in results.items()},
        'failures': [{'mode': f.mode, 'seed': f.seed, 'rule': f.rule,
                      'case': f.case, 'problems': f.problems,
                      'observation': f.obs} for f in failures],
    }


def replay(ctx, target_name, case, mode, mutation=None):
    """Play ``case`` (a dict of ``explore_space.CASE_FIELDS``) once in
    ``mode`` and judge it; print the observation's end and the problems.

    :returns: the problems (``[(rule, text)]``; empty: every rule held).
    :raises HarnessError: a case outside the explorer's table
        (``explore_space.check``).
    """
    problem = explore_space.check(case)
    if problem:
        raise HarnessError(f"case outside the explorer's table: {problem}")
    target = targets_mod.get(ctx, target_name)
    venv, _ = venvs.ensure_venv(ctx, target)
    with explore_tree(ctx, target, mutation) as tree, \
            _player(ctx, target, venv, tree, mode) as player:
        obs = player.play('explore-replay', case)
    put(f"{search_mod.describe(case)}")
    for field in ('status', 'task_state', 'host', 'fault', 'hooks_fired',
                  'refused', 'build_results', 'error'):
        put(f"  {field}: {obs.get(field)}")
    problems = universal.problems(obs)
    for rule, text in problems:
        put(f"  {rule}: {text}")
    put('every rule holds' if not problems else
        f"{len(problems)} rule(s) broken")
    return problems
