"""Every chart t3rl draws shows its texts as written (t3rl_core.charts): a category from a hub dataset,
a model path or a sweep point's override holding `$…$` was read by matplotlib as math, and text its
parser refuses (`x_{$y}$`, `$\\undefined$`) raised a ValueError at savefig: the eval ended after its
summary with no report.md, the sweep with no sweep.png."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from launch.run.sweep import Point, SweepSummary
from launch.run.sweep_plot import PLOT_FILE, plot_sweep
from t3rl_core.eval.metrics import EpisodeScore, summarize
from t3rl_core.eval.report import CHART_FILE, PASS_AT_K_FILE, REPORT_FILE, write_report

REFUSED_AS_MATH = ["x_{$y}$", "price $5 to $\\frac", "$\\undefinedcmd$", "a$^^$b"]


def _summary(category: str | list[str], model: str = "/models/ckpt") -> dict:
    categories = [category] if isinstance(category, str) else category
    scores = [EpisodeScore(f"t{i}", name, i % 2 == 0, 1.0) for name in categories for i in range(4)]
    scores += [EpisodeScore("u0", "plain", True, 1.0), EpisodeScore("u0", "plain", False, 0.0)]
    summary = summarize(scores, [1, 2])
    return {
        "split": "s",
        "engine": {"name": "hf", "model_path": model},
        "pass_k": [1, 2],
        "samples": 2,
        **summary,
    }


def test_a_category_and_a_model_path_that_are_no_math_still_report(tmp_path: Path) -> None:
    for i, text in enumerate(REFUSED_AS_MATH):
        out = tmp_path / str(i)
        write_report(_summary(text, model=f"/models/{text}"), out)
        assert f"| {text} |" in (out / REPORT_FILE).read_text()
        assert (out / CHART_FILE).read_bytes().startswith(b"\x89PNG")
        assert (out / PASS_AT_K_FILE).read_bytes().startswith(b"\x89PNG")


# Each example draws its texts as the categories of one report: the texts of 25 reports of one category
# each (the test before) cost 5 reports' drawing. Checked: with `text.parse_math` left on in
# t3rl_core.charts, it fails.
@settings(max_examples=5, deadline=None)
@given(st.lists(st.text(st.sampled_from("$\\{}^_ab"), min_size=1, max_size=12), min_size=5, max_size=5))
def test_any_text_of_dollars_and_backslashes_is_drawn(tmp_path_factory, texts: list[str]) -> None:
    out = tmp_path_factory.mktemp("report")
    write_report(_summary(texts), out)
    assert (out / CHART_FILE).is_file()


def test_a_sweep_point_whose_override_is_no_math_is_plotted(tmp_path: Path) -> None:
    summary = SweepSummary(sweep_dir=tmp_path, name="sweep-$x_{$", metric_name="eval: overall.accuracy")
    for index, text in enumerate(REFUSED_AS_MATH):
        run_dir = tmp_path / f"p{index:02d}"
        (run_dir / "stages" / "eval").mkdir(parents=True)
        overall = {"accuracy": 0.5, "episodes": 20}
        (run_dir / "stages" / "eval" / "summary.json").write_text(json.dumps({"overall": overall}))
        summary.add(Point(index, (f"+x='{text}'",), (f"+x='{text}'",)))
        summary.update(index, run_dir=str(run_dir), metric=0.5, status="succeeded")
    assert plot_sweep(summary) == tmp_path / PLOT_FILE
