"""A small custom verifiers MultiTurnEnv, written only in verifiers' terms: the model guesses a number,
the environment answers "higher" / "lower" in env_response, a stop condition ends it on the number."""

import verifiers as vf
from datasets import Dataset


class GuessEnv(vf.MultiTurnEnv):
    async def setup_state(self, state):
        state["guesses"] = 0
        return state

    @vf.stop
    async def guessed(self, state) -> bool:
        if not state["trajectory"]:
            return False
        return str(state["trajectory"][-1]["completion"][-1].content).strip() == state["answer"]

    async def env_response(self, messages, state, **kwargs):
        text = str(messages[-1].content or "").strip()
        state["guesses"] += 1
        if not text.isdigit():
            return [vf.UserMessage(content="Answer with a number only.")]
        hint = "higher" if int(text) < int(state["answer"]) else "lower"
        return [vf.UserMessage(content=f"No, {hint}.")]


def load_environment(secret: int = 6, max_turns: int = 5):
    rows = [
        {"question": "Guess my number between 1 and 10. Reply with the number only.", "answer": str(secret)}
    ]

    def solved(completion, answer) -> float:
        guesses = [m for m in completion if m.role == "assistant"]
        return 1.0 if guesses and str(guesses[-1].content).strip() == answer else 0.0

    def few_guesses(state) -> float:
        return 1.0 / max(1, len(state["trajectory"]))

    rubric = vf.Rubric(funcs=[solved, few_guesses], weights=[1.0, 0.25])
    return GuessEnv(dataset=Dataset.from_list(rows), rubric=rubric, max_turns=max_turns)
