"""The environment variables a stage inherits from t3rl's shell that change how it runs, not what it is.

They are no part of a run's identity (a stage is not stale for them: the same GPUs by another number, a
cache moved), yet a result may differ with them: a stage's record keeps those that were set when its
command started (`StageRecord.environ`), and a resume or its preview names each that changed since a
stage whose output it keeps ran (`changed_since`). The one list: a name (or a prefix ending in `*`) and
what it changes.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping

from launch.config.secrets import scrub_text

INHERITED: dict[str, str] = {
    "CUDA_VISIBLE_DEVICES": "the GPUs the stage's processes see",
    "NCCL_*": "NCCL's transport, algorithms and timeouts",
    "TORCH_NCCL_*": "PyTorch's NCCL watchdog and error handling",
    "PYTHONHASHSEED": "the order of str sets and dicts: what iterates one (sampling, shuffles)",
    "CUBLAS_WORKSPACE_CONFIG": "whether cuBLAS is deterministic",
    "PYTORCH_CUDA_ALLOC_CONF": "the CUDA allocator: what fits in GPU memory",
    "OMP_NUM_THREADS": "the CPU threads of each process",
    "HF_HOME": "the HF hub cache: which downloaded model and tokenizer files are read",
    "HF_HUB_CACHE": "the HF hub cache: which downloaded model and tokenizer files are read",
    "HUGGINGFACE_HUB_CACHE": "the HF hub cache (its older name)",
    "TRANSFORMERS_CACHE": "the transformers cache (its older name)",
    "HF_DATASETS_CACHE": "the datasets cache: which downloaded dataset files are read",
    "HF_HUB_OFFLINE": "whether the hub is asked for newer files",
    "HF_ENDPOINT": "the hub the files come from (a mirror)",
}


def inherited(environ: Mapping[str, str]) -> dict[str, str]:
    """The declared variables set in `environ`, each value as a record may keep it (a credential in an
    endpoint's URL masked)."""
    return {
        name: scrub_text(value)
        for name, value in sorted(environ.items())
        if any(fnmatch.fnmatchcase(name, pattern) for pattern in INHERITED)
    }


def changed_since(recorded: Mapping[str, str], now: Mapping[str, str]) -> list[str]:
    """`NAME: old → new` for each declared variable whose value differs (`unset` for one not set)."""
    return [
        f"{name}: {recorded.get(name, 'unset')} → {now.get(name, 'unset')}"
        for name in sorted(set(recorded) | set(now))
        if recorded.get(name) != now.get(name)
    ]
