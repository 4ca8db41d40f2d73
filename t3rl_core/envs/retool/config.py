"""Config of the ReTool Python environment and its data preparation (pydantic only)."""

from __future__ import annotations

from importlib import resources
from typing import Annotated, Literal

from pydantic import Field, field_validator

from t3rl_core.config import EnvConfig
from t3rl_core.fields import Differs, Label, LocalPath, Seed, SplitName, Text, Usual
from t3rl_core.input_files import InputFile, count_rows
from t3rl_core.sandbox.config import AnySandboxConfig, LocalSandboxConfig
from t3rl_core.strict import StrictModel

DEFAULT_INSTRUCTION = (
    "Solve the following math problem. You can run Python to help: write the code inside <code> and "
    "</code> tags, as a ```python fenced block, and its output will be returned to you inside "
    "<interpreter> and </interpreter> tags. Use the output to continue your reasoning. When you are "
    "done, end your reply with the final answer in this form:\n"
    "<answer>\n\\boxed{{your final answer}}\n</answer>\n\n"
    "Problem: {question}"
)


# Characters of a cell's output the model is shown: below an error's last line (~64) it sees no error and
# no result; above ~100k one answer fills a context.
TOOL_RESPONSE_CHARS = Usual(
    100_000.0,
    512.0,
    "one output would fill a model's context",
    least=64.0,
    least_why="an error's last line is longer: the model would see no result and no error",
)


class ReToolDataConfig(StrictModel):
    """Math problems with reference answers (DAPO-Math style), converted to t3rl JSONL rows."""

    # JSONL or parquet of problems; None = the few arithmetic problems shipped with t3rl (CPU runs).
    source: LocalPath | None = None
    # Field names of the problem text and of its reference answer (DAPO-Math-17K-cleaned: prompt, target).
    question_key: Label = "prompt"
    answer_key: Annotated[Label, Differs("question_key")] = "target"
    # metadata.data_source of every row (Agent-R1 dispatches its reward on this value).
    data_source: Label = "BytedTsinghua-SIA/DAPO-Math-17k"
    # Shuffle seed; the first `test_size` shuffled rows are the test split, the rest train
    # (Agent-R1: seed 42, 100 test rows; the order of datasets' Dataset.shuffle(seed)).
    seed: Seed = 42
    test_size: int = Field(100, ge=1)
    # Name of the prepared split file (<split>.jsonl) of the train problems.
    train_split: SplitName = "retool_train"
    # Name of the prepared split file of the test problems.
    test_split: SplitName = "retool_test"
    # Conversations for the SFT cold start (JSONL or parquet, one list of chat messages per row, the
    # assistant turns with their <code> and <interpreter> text). None = worked solutions of the
    # built-in sample's train problems when `source` is None too; else no SFT split is written.
    sft_source: LocalPath | None = None
    messages_key: Label = "messages"
    sft_split: SplitName = "retool_sft"
    # The user message; `{question}` is replaced by the problem (literal braces doubled).
    instruction: Text = DEFAULT_INSTRUCTION

    @field_validator("instruction")
    @classmethod
    def _has_question(cls, value: str) -> str:
        try:
            value.format(question="")
        except (KeyError, IndexError, ValueError) as err:
            raise ValueError(f"instruction must be a format string with only {{question}}: {err}") from None
        if "{question}" not in value:
            raise ValueError("instruction must contain {question}")
        return value


class ReToolEnvConfig(EnvConfig):
    """Multi-turn code interpreter: each `<code>` block runs in the sandbox, its output is spliced inline."""

    OUTCOME_FIELDS = frozenset(
        {"response", "ground_truth", "turns", "code_calls", "code_errors", "sandbox_errors", "truncated"}
    )

    SIZE_FIELDS = ("data.source", "data.test_size", "data.sft_source")
    ACTION_FORMAT = "code_block"

    name: Literal["retool_python"] = "retool_python"
    # Model turns per episode (Agent-R1 tool.max_turns: 5); a code call in the last turn still runs.
    max_turns: int = Field(5, ge=1)
    # Characters of sandbox output returned to the model; longer output is cut and "..." appended.
    max_tool_response_length: Annotated[int, TOOL_RESPONSE_CHARS] = Field(512, ge=1)
    sandbox: AnySandboxConfig = Field(default_factory=LocalSandboxConfig)
    data: ReToolDataConfig = Field(default_factory=ReToolDataConfig)

    def split_names(self) -> list[str]:
        """The JSONL files prepare_data writes."""
        d = self.data
        with_sft = d.sft_source is not None or d.source is None
        return [d.train_split, d.test_split, *([d.sft_split] if with_sft else [])]

    def model_call_limit(self) -> tuple[str, int]:
        """`max_turns` counts the model's turns, each one call."""
        return "max_turns", self.max_turns

    def demonstration_splits(self) -> frozenset[str]:
        """The SFT conversations, where prepare_data writes them."""
        return frozenset(self.split_names()) & {self.data.sft_split}

    def input_files(self) -> list[InputFile]:
        """The problems file (question and answer columns) and the SFT conversations (a messages list)."""
        d = self.data
        files = []
        if d.source is not None:
            columns = {d.question_key: "data.question_key", d.answer_key: "data.answer_key"}
            files.append(
                InputFile(
                    "data.source",
                    d.source,
                    "ReTool problems",
                    columns,
                    prompt=d.question_key,
                    splits=(d.train_split, d.test_split),
                )
            )
        if d.sft_source is not None:
            messages = {d.messages_key: "data.messages_key"}
            files.append(
                InputFile("data.sft_source", d.sft_source, "SFT conversations", messages, (d.messages_key,))
            )
        return files

    def split_sizes(self) -> dict[str, int] | None:
        """test_size of the problems are the test split, the rest train (the built-in worked solutions
        too); a user's SFT file is counted. None when a file cannot be counted here."""
        d = self.data
        problems = count_rows(d.source) if d.source is not None else _sample_problems()
        if problems is None:
            return None
        sizes = {d.test_split: min(d.test_size, problems), d.train_split: max(problems - d.test_size, 0)}
        conversations = count_rows(d.sft_source) if d.sft_source is not None else sizes[d.train_split]
        if conversations is not None and (d.sft_source is not None or d.source is None):
            sizes[d.sft_split] = conversations
        return sizes

    def prepare_refusals(self) -> list[tuple[str, str, str | None, tuple[str, ...]]]:
        """prepare holds out the first test_size problems: as many as there are leave no training rows."""
        d = self.data
        problems = count_rows(d.source) if d.source is not None else _sample_problems()
        if problems is None or problems > d.test_size:
            return []
        default = type(d).model_fields["test_size"].default
        fits = str(min(default, problems // 2)) if problems > 1 else None  # a test row and a train row
        why = f"{problems} problem(s) leave no training rows after holding out test_size={d.test_size}"
        # Read: the problems and how many are held out (the SFT file holds no problems).
        return [("data.test_size", why, fits, ("data.source", "data.test_size"))]

    def split_parts(self) -> dict[str, frozenset[str]]:
        """The test rows are the first shuffled rows, train the rest; the built-in SFT conversations solve
        train problems, a given SFT source is a dataset of its own."""
        d = self.data
        sft = {"train"} if d.sft_source is None else {f"sft:{d.sft_source}"}
        return {
            d.train_split: frozenset({"train"}),
            d.test_split: frozenset({"test"}),
            d.sft_split: frozenset(sft),
        }

    def eval_categories(self) -> list[str]:
        """Every row carries the configured data_source."""
        return [self.data.data_source]


def _sample_problems() -> int | None:
    """Problems of the sample shipped with t3rl (t3rl_core/envs/retool/sample_problems.jsonl)."""
    sample = resources.files("t3rl_core.envs.retool") / "sample_problems.jsonl"
    return count_rows(str(sample))
