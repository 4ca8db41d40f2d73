from t3rl_core.eval.metrics import EpisodeScore, summarize
from t3rl_core.eval.report import CHART_FILE, REPORT_FILE, write_report


def _summary(complete=True):
    scores = summarize(
        [
            EpisodeScore("multi_turn_base/1", "multi_turn_base", True, 1.0, 1.0),
            EpisodeScore("multi_turn_base/2", "multi_turn_base", False, 0.5, 0.5, status="truncated"),
            EpisodeScore("multi_turn_miss_func/1", "multi_turn_miss_func", True, 1.0, 1.0),
        ],
        ks=[1],
    )
    return {
        "split": "bfcl_test",
        "data": "data/bfcl_test.jsonl",
        "engine": {"name": "reference"},
        "samples": 1,
        "pass_k": [1],
        "temperature": 0.0,
        "complete": complete,
        "wall_time_s": 1.5,
        **scores,
    }


def test_report_has_the_numbers_and_the_chart(tmp_path):
    path = write_report(_summary(), tmp_path)
    assert path == tmp_path / REPORT_FILE
    text = path.read_text()
    assert "`bfcl_test` with engine `reference`" in text
    assert "| multi_turn_base | 2 | 2 | 0 | 0.500 | 0.750 | 0.750 | 0.500 | 0.500 |" in text
    assert "| **overall** | **3** | **3** | **0** | **0.667** |" in text
    assert "| category | completed | truncated | aborted | failed | parse_error |" in text
    assert "| multi_turn_base | 1 | 1 | 0 | 0 | 0 |" in text
    assert "incomplete" not in text
    assert f"]({CHART_FILE})" in text
    png = (tmp_path / CHART_FILE).read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 5000


def test_incomplete_runs_say_so_with_the_reason(tmp_path):
    summary = _summary(complete=False) | {"reason": "the engine failed 1 of 3 episode(s)"}
    text = write_report(summary, tmp_path).read_text()
    assert "**incomplete — do not use these numbers**: the engine failed 1 of 3 episode(s)" in text


def test_the_report_names_what_was_evaluated(tmp_path):
    summary = _summary() | {
        "model": {
            "engine": "sglang",
            "url": "http://user:***@gpu-node:30000",
            "served_model": "/ckpt/iter_0000100_hf",
            "checkpoint": {"path": "/ckpt/iter_0000100_hf", "fingerprint": "sha256:ab12"},
        },
        "sampling": {"temperature": 0.0, "max_new_tokens": 8192},
        "dataset": {"split": "bfcl_test", "path": "data/bfcl_test.jsonl", "sha256": "c50e99"},
        "git": {"sha": "258d0d2", "dirty": True},
    }
    text = write_report(summary, tmp_path).read_text()
    for fact in (
        "| url | `http://user:***@gpu-node:30000` |",
        "| served model (from the server) | `/ckpt/iter_0000100_hf` |",
        "| checkpoint fingerprint | `sha256:ab12` |",
        "| sampling | `temperature=0.0, max_new_tokens=8192` |",
        "| dataset sha256 | `c50e99` |",
        "| git | `258d0d2 (dirty)` |",
    ):
        assert fact in text


def test_wilson_interval_matches_the_textbook_values():
    from t3rl_core.eval.metrics import wilson_interval

    low, high = wilson_interval(5, 10)
    assert (round(low, 3), round(high, 3)) == (0.237, 0.763)
    low, high = wilson_interval(0, 5)  # all wrong: still an honest, non-empty interval
    assert low == 0.0 and round(high, 3) == 0.434
    assert wilson_interval(0, 0) == (0.0, 1.0)


def _zero_summary(ks):
    from t3rl_core.eval.metrics import EpisodeScore, summarize

    samples = max(ks)
    scores = summarize(
        [
            EpisodeScore(f"{c}/{t}", c, success, 0.0, 0.0)
            for c in ("multi_turn_base", "multi_turn_long_context")
            for t in range(3)
            for success in [False] * (samples - 1) + [c.endswith("base") and t == 0]
        ],
        ks=ks,
    )
    engine = {"name": "hf", "model_path": "/runs/quickstart/x/models/tiny_qwen3"}
    return {"split": "bfcl_test", "engine": engine, "samples": samples, "pass_k": ks, **scores}


def test_chart_names_model_split_and_n_and_draws_intervals_for_all_zero(tmp_path):
    from t3rl_core.eval.report import PASS_AT_K_FILE, chart_bars, chart_title

    summary = _zero_summary([1])
    bars = chart_bars(summary)
    long_context = next(b for b in bars if b.name == "long_context")
    assert long_context.accuracy == 0.0 and long_context.tasks == 3 and long_context.high > 0.4
    assert chart_title(summary) == "tiny_qwen3 (hf) on bfcl_test"
    text = write_report(summary, tmp_path).read_text()
    assert "- model: tiny_qwen3 (hf)" in text and "accuracy 95 % CI (Wilson)" in text
    assert "| multi_turn_long_context | 3 | 3 | 0 | 0.000 |" in text and "[0.000, 0.562] |" in text
    assert not (tmp_path / PASS_AT_K_FILE).exists()  # k = 1 only: no curve


def test_pass_at_k_curves_when_k_is_above_one(tmp_path):
    from t3rl_core.eval.report import PASS_AT_K_FILE

    text = write_report(_zero_summary([1, 2, 4]), tmp_path).read_text()
    assert (tmp_path / PASS_AT_K_FILE).read_bytes().startswith(b"\x89PNG")
    assert f"![pass@k]({PASS_AT_K_FILE})" in text
