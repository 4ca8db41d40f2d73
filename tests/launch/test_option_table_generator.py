"""The option table is the generator's output: run on the project's stand-ins for Megatron's and slime's
argument sources (tests/fixtures/slime_options: the same shapes, every path of the generator), the script
reproduces the committed table's rows for those options exactly, and the committed file is the script's
own rendering of its rows (nobody edited it by hand)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

from launch.plan import slime_option_table
from launch.plan.slime_option_table import OPTIONS

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "gen_slime_option_table.py"
FIXTURE = ROOT / "tests" / "fixtures" / "slime_options"


def generator():
    spec = importlib.util.spec_from_file_location("gen_slime_option_table", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def generate_from_fixture(out: Path) -> dict:
    subprocess.run(
        [sys.executable, str(SCRIPT), "--megatron", str(FIXTURE / "Megatron-LM"), "--slime",
         str(FIXTURE / "slime"), "--megatron-commit", slime_option_table.MEGATRON_LM_COMMIT,
         "--slime-commit", slime_option_table.SLIME_COMMIT, "--out", str(out)],
        check=True, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    namespace: dict = {}
    exec(compile(out.read_text(), str(out), "exec"), namespace)
    return namespace


def test_generator_reproduces_the_committed_rows_from_the_sources(tmp_path: Path) -> None:
    generated = generate_from_fixture(tmp_path / "table.py")
    options = generated["OPTIONS"]
    # Megatron options, slime options, slime's pre-parsed mode flags and a line slime's patch adds.
    assert {"--moe-layer-freq", "--eval-prompt-data", "--debug-rollout-only", "--use-gated-attention"} <= set(
        options
    )
    assert len(options) > 30
    # Every way the generator names a type function, and every source an option comes from.
    assert {option[2] for option in options.values()} >= {
        None, "int", "float", "str", "bool", "json.loads", "enum", "moe_freq_type", "tuple_type",
        "megatron.training.arguments:_add_inference_args.<locals>.<lambda>",
    }  # fmt: skip
    assert {option[0] for option in options.values()} == {"megatron", "slime", "slime-mode"}
    for name, option in options.items():
        assert tuple(option) == tuple(OPTIONS[name]), name
    assert generated["SLIME_COMMIT"] == slime_option_table.SLIME_COMMIT


def test_committed_table_is_the_renderers_output_and_names_its_commits() -> None:
    gen = generator()
    rows = [(o.source, (name,), o.nargs, o.type, o.choices) for name, o in OPTIONS.items()]
    text = gen.render(rows, slime_option_table.MEGATRON_LM_COMMIT, slime_option_table.SLIME_COMMIT)
    assert text == Path(slime_option_table.__file__).read_text()
    assert len(slime_option_table.MEGATRON_LM_COMMIT) == 40 == len(slime_option_table.SLIME_COMMIT)


def test_check_mode_reports_a_stale_table(tmp_path: Path) -> None:
    out = tmp_path / "table.py"
    generate_from_fixture(out)
    out.write_text(out.read_text().replace('"--swiglu"', '"--swiglu-typo"'))
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--megatron", str(FIXTURE / "Megatron-LM"), "--slime",
         str(FIXTURE / "slime"), "--megatron-commit", "a" * 40, "--slime-commit", "b" * 40,
         "--out", str(out), "--check"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 1 and "differs" in done.stdout
