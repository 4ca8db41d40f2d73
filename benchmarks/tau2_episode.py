"""tau2 episode CPU: each task's first episode, built, played and scored, t3rl vs tau2's own evaluator.

`--tasks` tasks of each domain's base split (default 20; retail, airline, telecom), each played once
with its gold plan against the scripted user, in a process that has loaded the domain (a warm-up
episode of another task) but has never seen these tasks, as a rollout worker meets a new prompt:
  A  t3rl: the env from the row (task parsed, gold plan), `reset()` (the episode's environment: a
     copy of the database, initial state applied; the user's opening), every step, and the final
     evaluation (`t3rl_core.envs.tau2.evaluation`; the task's gold database hashes are computed here,
     on its first episode), timed in process CPU seconds (all threads), one episode at a time;
  B  tau2 as is, on A's finished trajectory: the environment from tau2's constructor and
     `evaluate_simulation`, timed the same way, alternating task by task with A.
The reward info of both must be identical on every task (else the benchmark fails). The ideal is no
work beyond the episode's own tool calls; the figure is the whole CPU of the episode. Each condition
(idle; one core kept busy by a spinning child process this script starts and stops) plays its own
fresh tasks: the first `--tasks` of each domain idle, the next `--tasks` busy.
Targets (A's median, both conditions): retail <= 0.1 s, airline <= 0.3 s; telecom is reported.
The last line is B/A.

    .venv/bin/python benchmarks/tau2_episode.py [--domains retail airline telecom] [--tasks 20]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from busy_core import condition, label

from t3rl_core.envs.tau2.config import Tau2EnvConfig
from t3rl_core.envs.tau2.data import rows
from t3rl_core.envs.tau2.env import Tau2Env, evaluate_trajectory, make_factory

TARGETS = {"retail": 0.1, "airline": 0.3}


def cpu(work: Callable[[], Any]) -> tuple[float, Any]:
    started = time.process_time()
    result = work()
    return time.process_time() - started, result


async def played(factory: Any, row: dict[str, Any]) -> Tau2Env:
    env = factory(row, "eval")
    transition = await env.reset()
    while not transition.done:
        action = env.oracle()
        if action is None:
            break
        transition = await env.step(action)
    return env


def tau2_side(env: Tau2Env) -> dict[str, Any]:
    from t3rl_core.envs.tau2.domain import tau2_registry

    task, state = env.spec.task, env.spec.task.initial_state
    environment = tau2_registry().get_env_constructor(env.spec.domain)(solo_mode=False)
    environment.set_state(
        initialization_data=state.initialization_data if state else None,
        initialization_actions=state.initialization_actions if state else None,
        message_history=[],
    )
    return evaluate_trajectory(env.spec.domain, task, env._trajectory, env._termination)


def measure(factory: Any, tasks: list[dict[str, Any]]) -> tuple[list[float], list[float], list[str]]:
    """A's and B's CPU seconds per task, and the tasks whose reward infos differ."""
    a_times, b_times, differ = [], [], []
    for row in tasks:
        a, env = cpu(lambda row=row: asyncio.run(played(factory, row)))
        if env._termination is None:
            raise SystemExit(f"{env.spec.task.id}: the gold plan did not end the episode")
        b, b_info = cpu(lambda env=env: tau2_side(env))
        a_times.append(a)
        b_times.append(b)
        if env.outcome()["reward_info"] != b_info:
            differ.append(env.spec.task.id)
    return a_times, b_times, differ


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--domains", nargs="+", default=["retail", "airline", "telecom"])
    parser.add_argument("--tasks", type=int, default=20, help="fresh tasks per domain and condition")
    args = parser.parse_args()
    config = Tau2EnvConfig(domains=args.domains)
    factory = make_factory(config)
    by_domain: dict[str, list[dict[str, Any]]] = {}
    for row in rows(config, "base"):
        by_domain.setdefault(row["metadata"]["domain"], []).append(row)
    met, ratios = True, []
    for domain in args.domains:
        every = by_domain[domain]
        asyncio.run(played(factory, every[-1]))  # the domain loaded, as in a worker: not a measured task
        for number, busy in enumerate((False, True)):
            tasks = every[number * args.tasks : (number + 1) * args.tasks]
            with condition(busy):
                a_times, b_times, differ = measure(factory, tasks)
            a_med, b_med = statistics.median(a_times), statistics.median(b_times)
            target = TARGETS.get(domain)
            met &= (target is None or a_med <= target) and not differ
            ratios.append(f"{domain} {label(busy)} {b_med / a_med:.1f}")
            print(
                f"{domain:8s} {label(busy):13s} {len(a_times)} first episodes: t3rl median {a_med:.3f} s "
                f"(min {min(a_times):.3f}, max {max(a_times):.3f}; target "
                f"{f'<= {target} s' if target else 'reported'})  tau2 evaluator median {b_med:.3f} s "
                f"(min {min(b_times):.3f}, max {max(b_times):.3f})  reward info identical: "
                f"{len(a_times) - len(differ)}/{len(a_times)}" + (f" DIFFER: {differ[:5]}" if differ else "")
            )
    asyncio.run(factory.aclose())
    print("PASS" if met else "FAIL")
    print(f"ratio tau2 evaluator / t3rl whole first episode (CPU): {'; '.join(ratios)}")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
