"""A small OpenEnv environment written only in OpenEnv's terms, as a published one is: move a counter to a
target; every move costs 0.1, reaching the target pays 1. env=openenv's default server
(`uvicorn t3rl_core.envs.openenv.counter_example:app`), for trying the world without installing one."""

from typing import Any
from uuid import uuid4

from openenv.core.env_server import Action, Environment, Observation, State, create_app


class MoveAction(Action):
    """Move the counter by `delta`."""

    delta: int


class CounterObservation(Observation):
    value: int
    target: int
    message: str


class CounterEnv(Environment):
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, max_moves: int = 4) -> None:
        super().__init__()
        self.max_moves = max_moves
        self._state = State(episode_id=str(uuid4()), step_count=0)
        self.value = self.target = 0

    def reset(
        self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any
    ) -> CounterObservation:
        self._state = State(episode_id=episode_id or str(uuid4()), step_count=0)
        self.value, self.target = 0, 3 + (seed or 0) % 4
        return CounterObservation(value=0, target=self.target, message=f"Reach {self.target}.", done=False)

    def step(self, action: MoveAction, timeout_s: float | None = None, **kwargs: Any) -> CounterObservation:
        self._state.step_count += 1
        self.value += action.delta
        reached = self.value == self.target
        done = reached or self._state.step_count >= self.max_moves
        message = "Reached." if reached else f"Now at {self.value}."
        reward = 1.0 if reached else -0.1
        return CounterObservation(
            value=self.value, target=self.target, message=message, done=done, reward=reward
        )

    @property
    def state(self) -> State:
        return self._state


app = create_app(CounterEnv, MoveAction, CounterObservation, env_name="counter", max_concurrent_envs=16)
