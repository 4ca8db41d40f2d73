"""The suite draws the same random data on every run. A test that drew new data each run (`secrets`,
an unseeded `random`) failed now and then with nothing changed, wherever what the product makes of a
value depends on the value: CI at 36bfa50 failed 1 test of 6683 (a public key's body line beginning
with `+`, one draw in 32), tests/sandbox/test_sandbox_kinds_six failed one run in 20 (24 random letters
and digits after `api_key=` in a note hold no digit one draw in 70, and are prose then). Test data
comes from tests/support/draws.py (seeded by the test's id) or a `random.Random(seed)` (numpy's and
torch's generators seeded likewise), and Hypothesis runs derandomized without an example database
(tests/conftest.py's profile): a failure is one anyone can rerun.

What stays random is what must be unique, not data a product reads: `uuid.uuid4()` for a marker or a
socket's name, `tempfile`'s names, `os.urandom` for a SysV key shared with the host.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from pathlib import Path

import pytest
from hypothesis import settings

from tests.support import source_tree

ROOT = Path(__file__).resolve().parents[2]
# The `secrets` module's and `random`'s drawing functions; `random.seed(n)` first makes the latter's
# global generator a seeded one (tests/envs/bfcl/test_bfcl_data.py replays T3RL's own split so).
_SECRETS_DRAWS = frozenset({"choice", "randbelow", "randbits", "token_bytes", "token_hex", "token_urlsafe"})
_RANDOM_DRAWS = frozenset({
    "choice", "choices", "randint", "random", "sample", "shuffle", "randbytes", "getrandbits", "uniform",
    "randrange", "gauss", "normalvariate", "triangular", "betavariate", "expovariate",
})  # fmt: skip
# numpy's global generator and a Generator of no seed; torch's global one, unless the module seeds it.
_NUMPY_DRAW = re.compile(
    r"(np|numpy)\.random\.(rand|randn|randint|random|choice|shuffle|permutation|normal|uniform|bytes)"
)
_TORCH_DRAW = re.compile(r"torch\.(rand|randn|randint|randperm|rand_like|randn_like|multinomial|bernoulli)")


def unseeded_draws(source: str, nodes: Sequence[ast.AST] | None = None) -> list[str]:
    """`line: what` for each draw of test data in `source` that is not the same every run. `nodes`: the
    source's, when parsed already (tests/support/source_tree.py)."""
    nodes = tuple(ast.walk(ast.parse(source))) if nodes is None else nodes
    aliases = {"secrets": set(), "random": set()}  # the names each module is bound to
    seeded = False
    for node in nodes:
        if isinstance(node, ast.Import):
            for name in node.names:
                if name.name in aliases:
                    aliases[name.name].add(name.asname or name.name)
        elif isinstance(node, ast.ImportFrom) and node.module in aliases:
            drawn = _SECRETS_DRAWS if node.module == "secrets" else _RANDOM_DRAWS | {"SystemRandom"}
            for name in node.names:
                if name.name in drawn:
                    aliases[node.module].add(f"from:{name.asname or name.name}")
        if _call_of(node, aliases["random"], {"seed"}) and node.args:  # type: ignore[union-attr]
            seeded = True
    imported = {name for name in aliases["secrets"] | aliases["random"] if name.startswith("from:")}
    found = []
    for node in nodes:
        if not isinstance(node, ast.Call):
            continue
        what = ast.unparse(node.func)
        if _call_of(node, aliases["secrets"], _SECRETS_DRAWS | {"SystemRandom"}):
            found.append(f"{node.lineno}: {what} (secrets: new values every run)")
        elif _call_of(node, aliases["random"], {"SystemRandom"}) or (
            _call_of(node, aliases["random"], {"Random"}) and not (node.args or node.keywords)
        ):
            found.append(f"{node.lineno}: {what}() without a seed")
        elif _call_of(node, aliases["random"], _RANDOM_DRAWS) and not seeded:
            found.append(f"{node.lineno}: {what} (random's global generator, never seeded here)")
        elif isinstance(node.func, ast.Name) and f"from:{node.func.id}" in imported:
            found.append(f"{node.lineno}: {what} (imported from secrets or random)")
        elif _NUMPY_DRAW.fullmatch(what) or (
            re.fullmatch(r"(np|numpy)\.random\.default_rng", what) and not (node.args or node.keywords)
        ):
            found.append(f"{node.lineno}: {what} (numpy's generator, never seeded)")
        elif (
            _TORCH_DRAW.fullmatch(what)
            and "manual_seed(" not in source
            and "generator" not in {k.arg for k in node.keywords}
        ):
            found.append(f"{node.lineno}: {what} (torch's global generator, never seeded here)")
        elif what.endswith("settings") and any(
            k.arg == "database" or (k.arg == "derandomize" and not _true(k.value)) for k in node.keywords
        ):
            found.append(f"{node.lineno}: {what}(…) drawing new examples or keeping a database")
    return sorted(found, key=lambda line: int(line.split(":")[0]))


def _call_of(node: ast.AST, modules: set[str], functions: set[str] | frozenset[str]) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id in modules
        and node.func.attr in functions
    )


def _true(value: ast.expr) -> bool:
    return isinstance(value, ast.Constant) and value.value is True


def test_no_test_draws_new_data_each_run() -> None:
    found = {
        str(path.relative_to(ROOT)): draws
        for path in sorted((ROOT / "tests").rglob("*.py"))
        if (draws := unseeded_draws(source_tree.text(path), source_tree.nodes(path)))
    }
    assert found == {}, "draw from tests/support/draws.py or a random.Random(seed) instead:\n" + "\n".join(
        f"{path}:{line}" for path, lines in found.items() for line in lines
    )


def test_hypothesis_runs_the_same_examples_every_run(request: pytest.FixtureRequest) -> None:
    """The suite's profile (tests/conftest.py), in force where the property tests are decorated unless
    `--hypothesis-profile explore` asked for new examples."""
    suite = settings.get_profile("t3rl")
    assert suite.derandomize is True and suite.database is None
    if request.config.getoption("hypothesis_profile", None) is None:
        assert settings.default.derandomize is True and settings.default.database is None


@pytest.mark.parametrize(
    "source",
    [
        "import secrets\nv = secrets.token_hex(8)",
        "import secrets as random_source\nv = random_source.choice('ab')",
        "from secrets import token_bytes\nv = token_bytes(8)",
        "import random\nv = random.choice('ab')",
        "import random\nrng = random.Random()",
        "import random\nrng = random.SystemRandom()",
        "from random import shuffle\nshuffle(items)",
        "from hypothesis import settings\n@settings(derandomize=False)\ndef t(): ...",
        "from hypothesis import settings\n@settings(database=db)\ndef t(): ...",
        "import numpy as np\nx = np.random.rand(3)",
        "import numpy as np\nrng = np.random.default_rng()",
        "import torch\nx = torch.randn(2, 3)",
    ],
)
def test_each_unseeded_draw_is_found(source: str) -> None:
    assert unseeded_draws(source), source


@pytest.mark.parametrize(
    "source",
    [
        "import random\nv = random.Random(7).choice('ab')",
        "import random\nrng = random.Random(seed=3)",
        "import random\nrandom.seed(42)\nrandom.shuffle(items)",
        "import secrets\nok = secrets.compare_digest(a, b)",
        "import uuid\nmarker = uuid.uuid4().hex",
        "from launch.config import secrets\nsecrets.scrub_text(t)",
        "from hypothesis import settings\n@settings(max_examples=50, deadline=None)\ndef t(): ...",
        "import numpy as np\nx = np.random.default_rng(0).random(3)",
        "import torch\ntorch.manual_seed(0)\nx = torch.randn(2, 3)",
        "code = 'import numpy; print(numpy.random.rand())'",
    ],
)
def test_seeded_and_unique_draws_pass(source: str) -> None:
    assert unseeded_draws(source) == [], source
