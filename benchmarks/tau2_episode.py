"""tau2 episode overhead: building the domain environment and the final evaluation, t3rl vs tau2 as is.

Every shipped task of the base split (retail, airline; `--domains`) is played once with its gold plan
against the scripted user; on the finished trajectory both sides then do the same work, alternating
task by task, timed in CPU seconds:
  A  t3rl: the episode's environment (a copy of the database parsed once per process, initial state
     applied) and its evaluation (`t3rl_core.envs.tau2.evaluation`, the gold database hashed once
     per task: an episode of an already seen task, as the n samples of a GRPO group are);
  B  tau2: the same environment from tau2's constructor and `evaluate_simulation`.
The reward info of both must be identical on every task (else the benchmark fails).
Targets: A's median <= 0.1 s (retail) and <= 0.3 s (airline); the last line is B/A.

    .venv/bin/python benchmarks/tau2_episode.py [--domains retail airline] [--limit N]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from t3rl_core.envs.tau2.config import Tau2EnvConfig
from t3rl_core.envs.tau2.data import rows
from t3rl_core.envs.tau2.env import Tau2Env, evaluate_trajectory, make_factory
from t3rl_core.envs.tau2.evaluation import domain_world

TARGETS = {"retail": 0.1, "airline": 0.3, "telecom": 0.3}


def cpu(work: Callable[[], Any]) -> tuple[float, Any]:
    started = time.process_time()
    result = work()
    return time.process_time() - started, result


async def played(env: Tau2Env) -> Tau2Env:
    transition = await env.reset()
    while not transition.done:
        action = env.oracle()
        if action is None:
            break
        transition = await env.step(action)
    return env


def t3rl_side(env: Tau2Env) -> dict[str, Any]:
    env._build_environment()
    return env._evaluate()


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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--domains", nargs="+", default=["retail", "airline"])
    parser.add_argument("--limit", type=int, default=None, help="first N tasks per domain (default: all)")
    args = parser.parse_args()
    config = Tau2EnvConfig(domains=args.domains)
    factory = make_factory(config)
    by_domain: dict[str, list[dict[str, Any]]] = {}
    for row in rows(config, "base"):
        by_domain.setdefault(row["metadata"]["domain"], []).append(row)
    met, ratios = True, []
    for domain in args.domains:
        tasks = by_domain[domain][: args.limit]
        domain_world(domain)  # parsed once per process, as in a rollout worker
        a_times, b_times, differ = [], [], []
        for row in tasks:
            env = asyncio.run(played(factory(row, "eval")))
            if env._termination is None:
                continue
            env._evaluate()  # the task's first episode: computes its gold hashes
            a, a_info = cpu(lambda env=env: t3rl_side(env))
            b, b_info = cpu(lambda env=env: tau2_side(env))
            a_times.append(a)
            b_times.append(b)
            if a_info != b_info:
                differ.append(env.spec.task.id)
        a_med, b_med = statistics.median(a_times), statistics.median(b_times)
        target = TARGETS[domain]
        ok = a_med <= target and not differ
        met &= ok
        ratios.append(b_med / a_med)
        print(
            f"{domain:8s} {len(a_times)} tasks: t3rl median {a_med:.3f} s (min {min(a_times):.3f}, max "
            f"{max(a_times):.3f}; target <= {target} s)  tau2 median {b_med:.3f} s (min {min(b_times):.3f}, "
            f"max {max(b_times):.3f})  reward info identical: {len(a_times) - len(differ)}/{len(a_times)}"
            + (f" DIFFER: {differ[:5]}" if differ else "")
        )
    asyncio.run(factory.aclose())
    print("PASS" if met else "FAIL")
    print(f"ratio tau2/t3rl (env build + evaluation): {' '.join(f'{r:.1f}' for r in ratios)}")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
