"""Hunt wave 4: kinds of wrong configuration no earlier hunt listed, each closed by a declaration (the kind
of value, a bound its type declares, a rule reading every field of a kind), not by a case of its own:

- a SLURM time limit read as SLURM reads it (`t3rl_core.fields.slurm_fields`): each field of any size,
  the fields added up (`99:99:99` is 4-04:40:39, a warning with that reading as the fix), the sum in a C
  int (past it, refused), the no-limit words in any case; a limit shorter than any stage (`2:00` is two
  minutes) warned about with the hours meant (launch/checks/rules/slurm_time.py);
- a timeout too short for what it waits for (a server's start of 0.5 s, a request's of 1 ms, a code cell's
  of 0.001 s): `Usual` declares a floor beside its ceiling (`least`), 1 s for `Seconds` and 10 s for a
  start-up (`StartupSeconds`), warned about with the floor as the fix; every field whose name says it
  holds seconds or a timeout declares both (the audit below);
- a reference a job on the cluster reads (launch/checks/rules/cluster_references.py): under SLURM, whose
  jobs get the environment they are submitted from, an `env:` credential unset here (and named by no
  setup line) and a `file:` credential missing here; under SLURM and Ray, a credential file or a path of
  a path kind written under a node-local directory (/tmp, /dev/shm): warnings, the job's node not being
  this machine; and an `env:` credential an sbatch `--export` without ALL leaves out of the job;
- two settings naming one thing where two are meant (ReTool's question column given as its answer
  column: the model would be handed its answer): an order `Differs(other)` beside `AtLeast`/`Below`,
  refused at the key set last, with its default as the fix;
- a directory the launcher writes from this machine under SLURM or Ray (submitit's `executor.folder`,
  the run and plan dirs) that is a file or cannot be created here: `executor.folder` is a
  `SharedOutputDir` (an output dir, absolute), and these are judged under every executor;
- one thing given twice in a list under two spellings (an sbatch option with two values, two mounts onto
  one destination): `Distinct` declares what makes two items one (`identity`), and a repeat of it is
  refused with the first of each as the fix;
- an optimizer's rate far above any LLM's (a learning rate of 0.1, a weight decay of 10, a percent typed
  for 0.1): `LearningRate` and `weight_decay` declare a `Usual` ceiling, warned about;
- a limit too small for one use (a cell's tenth of a core, 4 KiB of its output, 64 characters of it shown
  to the model): `Usual` floors on those fields, warned about as a timeout's are;
- a switch on with nothing to do (BFCL's hints `enabled` with no `kinds`): the list declares at least one
  item, as every list that selects does;
- greedy decoding in disguise (a temperature of 1e-9, which SGLang decodes as it does 0): every greedy
  check reads SGLang's threshold (`sglang_names.greedy`), not `== 0`;
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from launch.checks.resolve import resolve
from launch.checks.sglang_names import GREEDY_BELOW
from launch.config.errors import Problem
from launch.run.executors.sbatch import _minutes
from t3rl_core.fields import Usual
from tests.support.in_tmp import in_tmp
from tests.support.refusals import errors, fixed
from tests.support.schema_leaves import config_models, import_all, leaves

S1 = "+experiment=stage1_bfcl"
SLURM = [S1, "executor=slurm"]


_in_tmp = in_tmp()  # relative paths of the configs resolve in one empty dir


def _warning(overrides: list[str], key: str) -> Problem | None:
    return next((w for w in resolve(overrides).warnings if w.key == key), None)


def _warned_with_a_fix_that_clears_it(overrides: list[str], key: str, fix: str) -> None:
    warning = _warning(overrides, key)
    assert warning is not None, f"no warning at {key}"
    assert warning.fix.startswith(fix), warning.fix
    assert _warning(fixed(overrides, warning), key) is None


def _refused_at_key_with_a_fix_that_validates(overrides: list[str], key: str) -> None:
    found = errors(overrides)
    named = [e for e in found if e.key == key]
    assert named, f"not refused at {key}: {[(e.key, e.message) for e in found]}"
    assert errors(fixed(overrides, named[0])) == []


# ------------------------------------------------------------------------------- SLURM time limits

SLURM_WARNED = [
    ("99:99:99", "set executor.time_limit=4-04:40:39"),  # minutes and seconds past 59, added up
    ("1-25:00:00", "set executor.time_limit=2-01:00:00"),  # hours past 23 beside days
    ("2-00:90", "set executor.time_limit=2-01:30:00"),
    ("10:00:75", "set executor.time_limit=10:01:15"),
    ("2:00", "set executor.time_limit=02:00:00"),  # two minutes to SLURM: two hours meant
    ("0:60", "set executor.time_limit=01:00:00"),
    ("'5'", "set executor.time_limit=05:00:00"),  # five minutes
]


@pytest.mark.parametrize(("limit", "fix"), SLURM_WARNED, ids=[limit for limit, _ in SLURM_WARNED])
def test_a_slurm_time_as_slurm_reads_it_is_warned_about(limit: str, fix: str) -> None:
    _warned_with_a_fix_that_clears_it([*SLURM, f"executor.time_limit={limit}"], "executor.time_limit", fix)


def test_a_slurm_time_past_what_slurm_sums_is_refused() -> None:
    _refused_at_key_with_a_fix_that_validates(
        [*SLURM, "executor.time_limit=99999999-00:00:00"], "executor.time_limit"
    )  # was accepted: SLURM's int of seconds wraps round


@pytest.mark.parametrize("limit", ["48:00:00", "'90'", "90:00", "1-2:3:4", "Infinite", "unlimited", "600:00"])
def test_a_slurm_time_that_reads_as_written_is_accepted_without_a_word(limit: str) -> None:
    assert _warning([*SLURM, f"executor.time_limit={limit}"], "executor.time_limit") is None


@pytest.mark.parametrize(
    ("limit", "minutes"), [("0:90", 2), ("99:99:99", 6041), ("1-2", 1560), ("INFINITE", 0), ("unlimited", 0)]
)
def test_submitit_gets_the_minutes_slurm_reads(limit: str, minutes: int) -> None:
    assert _minutes(limit) == minutes  # was 1 for 0:90, and a ValueError for the no-limit words


# ----------------------------------------------------------------------------------- too-short timeouts

S2 = "+experiment=stage2_bfcl"
SHORT = [
    ([S2, "eval.server.startup_timeout_s=0.5"], "eval.server.startup_timeout_s", "10"),
    ([S2, "eval.engine.timeout_s=0.001"], "eval.engine.timeout_s", "1"),
    ([S2, "eval.engine.health_timeout_s=0.05"], "eval.engine.health_timeout_s", "1"),
    (
        ["+experiment=retool", "sandbox=sandbox_fusion", "env.sandbox.run_timeout_s=0.001"],
        "env.sandbox.run_timeout_s",
        "1",
    ),
    (["+experiment=retool", "env.sandbox.timeout_s=0.01"], "env.sandbox.timeout_s", "1"),
    (["+experiment=tau2_pipeline", "env.user.timeout_s=0.2"], "env.user.timeout_s", "1"),
    ([*SLURM, "executor.ray_start_timeout_s=2"], "executor.ray_start_timeout_s", "10"),
]


@pytest.mark.parametrize(("overrides", "key", "floor"), SHORT, ids=[o[-1] for o, _, _ in SHORT])
def test_a_timeout_below_its_declared_floor_is_warned_about(
    overrides: list[str], key: str, floor: str
) -> None:
    _warned_with_a_fix_that_clears_it(overrides, key, f"set {key}={floor}")  # was accepted without a word


def test_a_timeout_at_its_floor_is_accepted_without_a_word() -> None:
    assert (
        _warning([S2, "eval.server.startup_timeout_s=10", "eval.engine.timeout_s=1"], "eval.engine.timeout_s")
        is None
    )


_TIMEOUT = re.compile(r"timeout|seconds|(^|_)s$")


def test_every_timeout_field_declares_a_usual_ceiling_and_floor() -> None:
    import_all()
    timed = [leaf for model in config_models() for leaf in leaves(model) if _TIMEOUT.search(leaf.field)]
    assert len(timed) > 15, "the walk found too few timeout fields"
    undeclared = [
        leaf.name
        for leaf in timed
        if not any(isinstance(m, Usual) and m.least is not None for m in leaf.metadata)
    ]
    assert undeclared == [], "declare a Usual with `least` (Seconds, StartupSeconds, Delay)"


# ------------------------------------------------------------------ references a cluster's job reads

UNSET = "T3RL_HUNT_WAVE4_UNSET"
TAU2 = "+experiment=tau2_pipeline"
ON_THE_CLUSTER = [
    ([TAU2, "executor=slurm", f"env.user.api_key=env:{UNSET}"], "env.user.api_key"),
    ([S2, "executor=slurm", f"eval.engine.api_key=env:{UNSET}"], "eval.engine.api_key"),
    ([TAU2, "executor=slurm", "env.user.api_key=file:/nonexistent/t3rl-wave4/key"], "env.user.api_key"),
    ([TAU2, "executor=slurm", "env.user.api_key=file:/tmp/key"], "env.user.api_key"),
    ([TAU2, "executor=ray", "env.user.api_key=file:/dev/shm/key"], "env.user.api_key"),
    ([S2, "executor=slurm", "paths.runs_dir=/tmp/runs"], "paths.runs_dir"),
    ([S2, "executor=ray", "paths.cache_dir=/var/tmp/t3rl"], "paths.cache_dir"),
    ([S2, "executor=slurm", "model.hf_checkpoint=/dev/shm/qwen"], "model.hf_checkpoint"),
]


@pytest.mark.parametrize(
    ("overrides", "key"), ON_THE_CLUSTER, ids=[" ".join(o[1:]) for o, _ in ON_THE_CLUSTER]
)
def test_a_reference_the_clusters_job_cannot_read_is_warned_about(
    overrides: list[str], key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(UNSET, raising=False)
    warning = _warning(overrides, key)  # was accepted without a word
    assert warning is not None, f"no warning at {key}"
    if warning.fix.startswith(f"set {key}=") and " to " not in warning.fix.split(",")[0]:
        assert _warning(fixed(overrides, warning), key) is None


def test_what_the_cluster_may_read_is_accepted_without_a_word(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(UNSET, raising=False)
    # Ray expands env: from the cluster's environment; a relative path is the job's own directory's
    assert _warning([TAU2, "executor=ray", f"env.user.api_key=env:{UNSET}"], "env.user.api_key") is None
    assert _warning([S2, "executor=slurm", "paths.runs_dir=runs"], "paths.runs_dir") is None
    # a setup line exports it in the job; set here, sbatch passes it on
    setup = f"executor.setup=['export {UNSET}=$(cat ~/.key)']"
    assert (
        _warning([TAU2, "executor=slurm", f"env.user.api_key=env:{UNSET}", setup], "env.user.api_key") is None
    )
    monkeypatch.setenv(UNSET, "a-key")
    assert _warning([TAU2, "executor=slurm", f"env.user.api_key=env:{UNSET}"], "env.user.api_key") is None


# -------------------------------------------------------------- two names of one thing, dirs written here

RETOOL = "+experiment=retool"
SAME_THING = [
    ([RETOOL, "env.data.question_key=target"], "env.data.question_key"),
    ([RETOOL, "env.data.answer_key=prompt"], "env.data.answer_key"),
    ([RETOOL, "env.data.question_key=q", "env.data.answer_key=q"], "env.data.answer_key"),
]


@pytest.mark.parametrize(("overrides", "key"), SAME_THING, ids=[" ".join(o[1:]) for o, _ in SAME_THING])
def test_two_settings_naming_one_column_are_refused(overrides: list[str], key: str) -> None:
    _refused_at_key_with_a_fix_that_validates(
        overrides, key
    )  # was accepted: the answer given as the question


WRITTEN_HERE = [
    ([*SLURM, "executor.folder=/etc/passwd"], "executor.folder"),
    ([*SLURM, "executor.folder=/proc/t3rl-wave4"], "executor.folder"),
    ([*SLURM, "paths.runs_dir=/etc/passwd"], "paths.runs_dir"),
    # A run under ray writes its run dir here, and no plan: paths.plans_dir is t3rl plan's to judge.
    ([S1, "executor=ray", "paths.runs_dir=/dev/null"], "paths.runs_dir"),
]


@pytest.mark.parametrize(("overrides", "key"), WRITTEN_HERE, ids=[" ".join(o[1:]) for o, _ in WRITTEN_HERE])
def test_a_directory_the_launcher_writes_here_is_refused_when_it_cannot_be(
    overrides: list[str], key: str
) -> None:
    _refused_at_key_with_a_fix_that_validates(overrides, key)  # was accepted under slurm and ray


def test_a_clusters_own_directory_is_not_judged_here() -> None:
    assert errors([*SLURM, "paths.checkpoints_dir=/proc/t3rl-wave4"]) == []  # written by the nodes


REPEATED = [
    ([*SLURM, "executor.extra_sbatch=['--qos=high','--qos=low']"], "executor.extra_sbatch"),
    ([*SLURM, "executor.container_mounts=['/a:/b','/c:/b']"], "executor.container_mounts"),
    (
        [*SLURM, "executor.container_mounts=['/b','/c:/b']"],
        "executor.container_mounts",
    ),  # DST defaults to SRC
]


@pytest.mark.parametrize(("overrides", "key"), REPEATED, ids=[o[-1] for o, _ in REPEATED])
def test_one_option_or_destination_given_twice_is_refused(overrides: list[str], key: str) -> None:
    _refused_at_key_with_a_fix_that_validates(overrides, key)  # was accepted: the last one wins silently


def test_distinct_options_and_destinations_are_accepted() -> None:
    assert errors([*SLURM, "executor.extra_sbatch=['--qos=high','--constraint=h100']"]) == []
    assert errors([*SLURM, "executor.container_mounts=['/a:/b','/a:/c']"]) == []


C = "stages.train.curriculum.optimizer"
RATES = [
    ([S1, f"{C}.weight_decay=10"], f"{C}.weight_decay", f"set {C}.weight_decay=0.1"),  # a percent for 0.1
    ([S1, f"{C}.lr=0.1"], f"{C}.lr", f"set {C}.lr=1e-06"),
]


@pytest.mark.parametrize(("overrides", "key", "fix"), RATES, ids=[o[-1] for o, _, _ in RATES])
def test_an_optimizer_rate_above_any_llms_is_warned_about(overrides: list[str], key: str, fix: str) -> None:
    _warned_with_a_fix_that_clears_it(overrides, key, fix)  # was accepted without a word


def test_an_llms_usual_rates_are_accepted_without_a_word() -> None:
    overrides = [S1, f"{C}.weight_decay=0.1", f"{C}.lr=3e-4"]
    assert _warning(overrides, f"{C}.weight_decay") is None
    assert _warning(overrides, f"{C}.lr") is None


NEAR_ZERO = [
    ([S1, "stages.train.curriculum.rollout_temperature=1e-9"], "stages.train.curriculum.rollout_temperature"),
    ([S2, "eval.temperature=1e-7", "eval.samples=4", "eval.pass_k=[1,4]"], "eval.samples"),
]


@pytest.mark.parametrize(("overrides", "key"), NEAR_ZERO, ids=[o[1] for o, _ in NEAR_ZERO])
def test_a_temperature_sglang_decodes_greedily_is_greedy(overrides: list[str], key: str) -> None:
    _refused_at_key_with_a_fix_that_validates(overrides, key)  # was accepted: only 0 was greedy


def test_greedy_nucleus_settings_are_warned_about_below_the_threshold_too() -> None:
    assert _warning([S2, "eval.temperature=1e-7", "eval.top_p=0.9"], "eval.top_p") is not None
    assert errors([S1, "stages.train.curriculum.rollout_temperature=1e-6"]) == []  # SGLang samples at it


def test_the_greedy_threshold_is_sglangs() -> None:
    spec = importlib.util.find_spec("sglang")
    if spec is None or spec.origin is None:
        pytest.skip("SGLang is not installed")
    source = Path(spec.origin).parent / "srt" / "sampling" / "sampling_params.py"
    found = re.search(r"^_SAMPLING_EPS = (\S+)$", source.read_text(), re.MULTILINE)
    assert found is not None and float(found[1]) == GREEDY_BELOW  # read as text: importing SGLang loads torch
    assert "if 0 <= self.temperature < _SAMPLING_EPS:" in source.read_text()


EXPORT = [
    ("['--export=NONE']", True),
    ("['--export=PATH']", True),  # only the variables it names
    ("['--export=HOME,PATH']", False),
    ("['--export=ALL']", False),
]


@pytest.mark.parametrize(("export", "warned"), EXPORT, ids=[e for e, _ in EXPORT])
def test_a_credential_an_sbatch_export_leaves_out_is_warned_about(export: str, warned: bool) -> None:
    # HOME is set here: without --export sbatch passes it on
    overrides = [TAU2, "executor=slurm", "env.user.api_key=env:HOME", f"executor.extra_sbatch={export}"]
    warning = _warning(overrides, "env.user.api_key")  # was accepted: sbatch passes only what --export names
    assert (warning is not None) is warned
    if warning is not None:
        assert _warning(fixed(overrides, warning), "env.user.api_key") is None


def test_hints_enabled_with_no_kind_are_refused() -> None:
    overrides = [S1, "env.augmentation.enabled=true", "env.augmentation.kinds=[]"]
    _refused_at_key_with_a_fix_that_validates(overrides, "env.augmentation.kinds")  # was accepted


TOO_SMALL = [
    ([RETOOL, "env.sandbox.cpu_cores=0.001"], "env.sandbox.cpu_cores", "0.1"),
    ([RETOOL, "env.sandbox.max_output_bytes=1"], "env.sandbox.max_output_bytes", "4096"),
    ([RETOOL, "env.max_tool_response_length=1"], "env.max_tool_response_length", "64"),
]


@pytest.mark.parametrize(("overrides", "key", "floor"), TOO_SMALL, ids=[o[-1] for o, _, _ in TOO_SMALL])
def test_a_limit_too_small_for_one_use_is_warned_about(overrides: list[str], key: str, floor: str) -> None:
    _warned_with_a_fix_that_clears_it(overrides, key, f"set {key}={floor}")  # was accepted without a word
