"""`t3rl rollouts show`: slime's saved rollout files (written here with torch.save exactly as slime's
save_debug_rollout_data does: {"rollout_id", "samples": [Sample.to_dict()]}) shown as tables, with the
TITO check failing a file whose token accounting is off."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from launch.cli.app import app
from launch.cli.rollouts import load_samples, rollout_files, show, tito_problems
from tests.support.slime_sample import Sample

PROMPT = [
    {"role": "system", "content": "You help the user by calling the functions available to you."},
    {"role": "user", "content": "Move final_report.pdf into the temp directory, then list what is there."},
]
RESPONSE = (
    "<thinking>cd into the workspace first</thinking>\n<tool_call>\n"
    '{"name": "mv", "arguments": {"source": "final_report.pdf", "destination": "temp"}}\n</tool_call>'
)


def slime_dict(sample: Sample) -> dict:
    """Sample.to_dict() of slime (slime/utils/types.py): the fields, status as its value, two info dicts."""
    value = dataclasses.asdict(sample)
    value["status"] = sample.status.value
    value["spec_info"] = {"spec_accept_token_num": 0, "spec_draft_token_num": 0, "spec_verify_ct": 0,
                          "completion_token_num": 0}  # fmt: skip
    value["prefix_cache_info"] = {"cached_tokens": 0, "total_prompt_tokens": 0}
    return value


def sample(index: int, *, reward: float = 1.0, mask_len: int | None = None) -> dict:
    prompt_len, n = 40, 24
    mask = [1] * 16 + [0] * 6 + [1] * 2  # model tokens, an observation, the closing model tokens
    made = Sample(
        index=index, group_index=index // 2, prompt=PROMPT, tokens=list(range(prompt_len + n)),
        response=RESPONSE, response_length=n, reward=reward, loss_mask=mask[: mask_len or n],
        rollout_log_probs=[-0.5 if m else 0.0 for m in mask], status=Sample.Status.COMPLETED,
        metadata={"data_source": "multi_turn_base", "bfcl_metrics": {"progress": reward}},
    )  # fmt: skip
    return slime_dict(made)


def save(path: Path, rollout_id: int, samples: list[dict]) -> Path:
    import torch  # here, not at collection: ~1.5 s per process, and every xdist worker collects the suite

    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"rollout_id": rollout_id, "samples": samples}, path)
    return path


def render(target: Path, **kw) -> tuple[int, str]:
    console = Console(record=True, width=200)
    options = {"limit": None, "width": 60, "full": None, "trust": False, **kw}
    code = show(target, console, **options)
    return code, console.export_text()


def test_a_debug_rollout_file_is_shown_per_sample(tmp_path: Path) -> None:
    path = save(tmp_path / "rollout_data_0.pt", 0, [sample(0), sample(1, reward=0.0)])
    code, text = render(path, full=1)
    assert code == 0
    assert "rollout 0: 2 samples, mean reward 0.500" in text
    assert "Move final_report.pdf into the temp" in text  # the last user message's head
    assert "⟦<tool_call>" in text and "completed" in text
    assert "75% of 24" in text  # 18 of 24 response tokens trained
    assert text.count(" ok ") >= 2 or text.count("│ ok") >= 2
    assert '"destination": "temp"' in text  # --full prints the whole response


def test_a_broken_sample_fails_the_tito_check(tmp_path: Path) -> None:
    path = save(tmp_path / "rollout_data_0.pt", 0, [sample(0), sample(1, mask_len=20)])
    code, text = render(path)
    assert code == 1
    assert "loss_mask 20 ≠ response_length 24" in text and "1 sample(s) break the TITO check" in text
    assert tito_problems(sample(0)) == []


def test_a_broken_sample_beyond_the_limit_is_named(tmp_path: Path) -> None:
    path = save(tmp_path / "rollout_data_0.pt", 0, [sample(0), sample(1), sample(2, mask_len=20)])
    code, text = render(path, limit=1)
    assert code == 1
    assert "1 sample(s) break the TITO check: rollout_data_0.pt sample 2" in text
    assert "not shown (--limit): rollout_data_0.pt sample 2" in text


def test_a_file_torch_did_not_write_is_named_so_even_when_trusted(tmp_path: Path) -> None:
    text_file = tmp_path / "notes.pt"
    text_file.write_text("12 garbage\n")
    for trust in (False, True):
        code, text = render(text_file, trust=trust)
        assert code == 2 and "is not a file torch.save wrote" in text and "invalid literal" not in text


def test_a_directory_is_read_in_rollout_order(tmp_path: Path) -> None:
    for rollout_id in (10, 2):
        save(tmp_path / f"rollout_data_{rollout_id}.pt", rollout_id, [sample(0)])
    save(tmp_path / "dump" / "rollout_data" / "3.pt", 3, [sample(0)])  # --dump-details layout
    files = rollout_files(tmp_path)
    assert [p.name for p in files] == ["rollout_data_2.pt", "rollout_data_10.pt", "3.pt"]
    assert load_samples(files[1])[0] == 10


def test_unsafe_or_foreign_files_are_refused_with_a_reason(tmp_path: Path) -> None:
    import torch

    pickled = tmp_path / "custom.pt"
    torch.save({"rollout_id": 0, "samples": [Sample(index=0)]}, pickled)  # a live object, not a dict
    code, text = render(pickled)
    assert code == 2 and "--trust" in text and "Unsupported global" in text
    code, text = render(pickled, trust=True)
    assert code == 0 and "1 sample" in text and "pending" in text
    other = tmp_path / "weights.pt"
    torch.save({"weight": torch.zeros(2)}, other)
    assert render(other)[0] == 2
    assert render(tmp_path / "missing")[0] == 2


def test_the_command_line(tmp_path: Path) -> None:
    path = save(tmp_path / "rollout_data_0.pt", 0, [sample(i) for i in range(5)])
    result = CliRunner().invoke(app, ["rollouts", "show", str(path), "--limit", "2"])
    assert result.exit_code == 0, result.output
    assert "3 more samples" in result.output


@pytest.mark.parametrize("args", [["rollouts", "show", "--help"]])
def test_help_teaches(args: list[str]) -> None:
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0 and "TITO" in result.output
