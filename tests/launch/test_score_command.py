"""`t3rl score WORLD FILE.jsonl [OVERRIDES]`: verdicts per line, a summary, nothing written on refusal."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from launch.cli.app import app
from t3rl_core import score

GOOD = '<think>check</think>\n<tool_call>\n{"name": "f", "parameters": {"a": 1}}\n</tool_call>'
PARTIAL = '<think>check</think>\n<tool_call>\n{"name": "f", "parameters": {"a": 2}}\n</tool_call>'


def invoke(*args: str):
    return CliRunner().invoke(app, list(args), catch_exceptions=False)


def write(path, *lines: object):
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))
    return path


def read_verdicts(out):
    return [json.loads(line) for line in (out / "verdicts.jsonl").read_text().splitlines()]


def test_bfcl_file_gives_official_verdicts_and_keeps_bad_lines(tmp_path):
    row = score.bfcl_row("multi_turn_base_1")
    gold = [[turn] for turn in row["metadata"]["bfcl_task"]["ground_truth"]]
    file = write(
        tmp_path / "trajs.jsonl",
        {"id": "multi_turn_base_1", "decoded": gold},
        {"id": "multi_turn_base_1", "decoded": gold[:1]},
        "not json",
        {"id": "multi_turn_base_99999", "decoded": gold},
        {"id": "multi_turn_base_1", "decode": gold},
    )
    result = invoke("score", "bfcl", str(file), "--no-progress")
    assert result.exit_code == 1, result.output  # lines failed to score: named on stderr, kept below
    for number, said in ((3, "JSONDecodeError"), (4, "unknown BFCL task id"), (5, "missing decoded")):
        line = next(x for x in result.stderr.splitlines() if x.startswith(f"{file}:{number}: "))
        assert said in line, result.stderr
    assert f"{file}:1:" not in result.stderr and f"{file}:2:" not in result.stderr
    out = tmp_path / "trajs.scored"  # FILE's name with .scored for .jsonl, as --help says
    verdicts = read_verdicts(out)
    assert [v["line"] for v in verdicts] == [1, 2, 3, 4, 5]
    assert verdicts[0]["success"] is True and verdicts[1]["details"]["failed_turn"] == 1
    assert "error" in verdicts[2] and "unknown BFCL task id" in verdicts[3]["error"]
    assert verdicts[4]["error"] == "ValueError: missing decoded (a bfcl line has id, decoded)"
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["scored"], summary["errors"], summary["success_rate"]) == (2, 3, 0.5)
    assert summary["groups"]["multi_turn_base"]["scored"] == 2


def test_overrides_choose_the_reward_variant(tmp_path):
    file = write(
        tmp_path / "answers.jsonl", {"id": "a", "response": PARTIAL, "ground_truth": GOOD, "step": 3}
    )
    out = tmp_path / "out"
    assert (
        invoke(
            "score", "toolrl", str(file), "reward=toolrl_coarse", "--out", str(out), "--no-progress"
        ).exit_code
        == 0
    )
    (verdict,) = read_verdicts(out)
    expected = score.toolrl(PARTIAL, GOOD, step=3, variant="coarse")
    assert verdict["reward"] == expected.reward != score.toolrl(PARTIAL, GOOD, step=3).reward


def test_refused_commands_write_nothing(tmp_path):
    file = write(tmp_path / "answers.jsonl", {"response": GOOD, "ground_truth": GOOD})
    typo = invoke("score", "toolrl", str(file), "reward=toolrl_coarse", "reward.coarsee=true")
    assert typo.exit_code == 2 and "did you mean 'reward.coarse'?" in typo.output
    assert invoke("score", "toolrll", str(file)).exit_code == 2
    assert invoke("score", "toolrl", str(tmp_path / "missing.jsonl")).exit_code == 2
    empty = write(tmp_path / "empty.jsonl")
    refused = invoke("score", "toolrl", str(empty))
    assert refused.exit_code == 2 and "has no line to score" in refused.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["answers.jsonl", "empty.jsonl"]


def test_help_names_the_default_out_dir_the_command_uses():
    help_text = " ".join(CliRunner().invoke(app, ["score", "--help"], env={"COLUMNS": "300"}).output.split())
    assert "runs/r.jsonl → runs/r.scored/" in help_text


def test_lines_take_their_ground_truth_from_a_prepared_split(tmp_path):
    rows = tmp_path / "toolrl_test.jsonl"
    prompt = [{"role": "user", "content": "Call f with a=1."}]
    row = {"prompt": prompt, "metadata": {"data_source": "rlla", "index": 7}, "label": GOOD}
    write(rows, row)
    file = write(
        tmp_path / "answers.jsonl", {"id": "rlla/7", "response": GOOD}, {"id": "rlla/8", "response": GOOD}
    )
    out = tmp_path / "out"
    result = invoke("score", "toolrl", str(file), "--data", str(rows), "--out", str(out), "--no-progress")
    assert result.exit_code == 1  # line 2's id is not in the split
    found, unknown = read_verdicts(out)
    assert found["reward"] == score.toolrl(GOOD, GOOD).reward and found["success"] is True
    assert unknown["error"] == "ValueError: missing ground_truth (a toolrl line has response, ground_truth)"
    write(rows, {"prompt": [], "label": GOOD})
    refused = invoke("score", "toolrl", str(file), "--data", str(rows), "--out", str(tmp_path / "no"))
    assert refused.exit_code == 2 and not (tmp_path / "no").exists()


def test_a_tau2_line_takes_domain_and_task_from_its_row():
    from launch.cli.score import _WithRows

    row = {"metadata": {"domain": "airline", "task_id": "5", "task": {"id": "5"}}}
    filled = _WithRows("tau2", lambda item: item, {"tau2_airline/5": row}).fill(
        {"id": "tau2_airline/5", "messages": []}
    )
    assert (filled["domain"], filled["task"]) == ("airline", {"id": "5"})
