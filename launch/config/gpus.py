"""What each GPU type is (vendor, architecture, compute capability, memory), and what each attention
kernel backend needs of it: declarations the pre-flight reads (`launch.checks.rules.kernels`) instead
of knowing GPUs or kernels by name. Facts from the vendors' data sheets and SGLang's / FlashAttention's
stated support."""

from __future__ import annotations

import re
from itertools import pairwise
from typing import Literal

from t3rl_core.records import Record

Vendor = Literal["nvidia", "amd"]


class Gpu(Record):
    vendor: Vendor
    # NVIDIA compute capability × 10 (Hopper 90); None for other vendors.
    sm: int | None
    # Memory of one GPU in GiB, each variant sold.
    memory_gib: tuple[float, ...]

    @property
    def generation(self) -> str:
        if self.vendor != "nvidia" or self.sm is None:
            return self.vendor
        return {70: "Volta", 75: "Turing", 80: "Ampere", 86: "Ampere", 89: "Ada", 90: "Hopper"}.get(
            self.sm, "Blackwell" if self.sm >= 100 else f"sm{self.sm}"
        )


GPUS: dict[str, Gpu] = {
    "V100": Gpu("nvidia", 70, (16, 32)),
    "T4": Gpu("nvidia", 75, (16,)),
    "A10": Gpu("nvidia", 86, (24,)),
    "A100": Gpu("nvidia", 80, (40, 80)),
    "A800": Gpu("nvidia", 80, (40, 80)),
    "A6000": Gpu("nvidia", 86, (48,)),
    "L4": Gpu("nvidia", 89, (24,)),
    "L40": Gpu("nvidia", 89, (48,)),
    "L40S": Gpu("nvidia", 89, (48,)),
    "RTX4090": Gpu("nvidia", 89, (24,)),
    "H100": Gpu("nvidia", 90, (80, 94)),
    "H800": Gpu("nvidia", 90, (80,)),
    "H20": Gpu("nvidia", 90, (96, 141)),  # the later HBM3e board holds 141 GB
    "H200": Gpu("nvidia", 90, (141,)),
    "GH200": Gpu("nvidia", 90, (96, 144)),
    "B200": Gpu("nvidia", 100, (180,)),
    "GB200": Gpu("nvidia", 100, (186,)),
    "B300": Gpu("nvidia", 103, (288,)),
    "MI250X": Gpu("amd", None, (128,)),
    "MI300X": Gpu("amd", None, (192,)),
    "MI325X": Gpu("amd", None, (256,)),
}


def named_gpu(text: str) -> str | None:
    """The one GPU type among the words of `text`, as vendors' tools print a GPU (`nvidia-smi`: `NVIDIA
    H100 80GB HBM3`, `Tesla V100-SXM2-32GB`, `NVIDIA GeForce RTX 4090`; `rocm-smi`: `AMD Instinct MI300X`);
    None when it names none or several."""
    words = [word for word in re.split(r"[\s_/-]+", text.upper()) if word]
    found = {w for w in words if w in GPUS} | {a + b for a, b in pairwise(words) if a + b in GPUS}
    return found.pop() if len(found) == 1 else None


class KernelNeeds(Record):
    """What an attention backend needs: a vendor, a compute-capability range, multi-latent attention."""

    vendor: Vendor | None = "nvidia"
    min_sm: int | None = None
    max_sm: int | None = None
    mla_only: bool = False
    why: str = ""

    def refuses(self, gpu: Gpu, mla: bool) -> str | None:
        """Why a GPU (and model) cannot run the backend, or None."""
        if self.vendor is not None and gpu.vendor != self.vendor:
            return f"it runs on {self.vendor.upper()} GPUs only"
        if gpu.sm is not None and self.min_sm is not None and gpu.sm < self.min_sm:
            return f"it needs compute capability {_capability(self.min_sm)} or newer{self.why}"
        if gpu.sm is not None and self.max_sm is not None and gpu.sm > self.max_sm:
            return f"it supports compute capability up to {_capability(self.max_sm)}{self.why}"
        if self.mla_only and not mla:
            return "it implements multi-latent attention only (DeepSeek-style models)"
        return None


# SGLang's --attention-backend values that need a particular GPU (the others run anywhere SGLang does).
SGLANG_ATTENTION: dict[str, KernelNeeds] = {
    "fa3": KernelNeeds(min_sm=80, max_sm=90, why=" (FlashAttention 3: Ampere to Hopper, not Blackwell)"),
    "fa4": KernelNeeds(min_sm=90, why=" (FlashAttention 4: Hopper and Blackwell)"),
    "flashinfer": KernelNeeds(min_sm=75),
    "flashmla": KernelNeeds(min_sm=90, max_sm=90, mla_only=True, why=" (FlashMLA: Hopper)"),
    "trtllm_mla": KernelNeeds(min_sm=100, mla_only=True, why=" (TensorRT-LLM kernels: Blackwell)"),
    "cutedsl_mla": KernelNeeds(min_sm=100, mla_only=True, why=" (CuTe DSL kernels: Blackwell)"),
    "trtllm_mha": KernelNeeds(min_sm=100, why=" (TensorRT-LLM kernels: Blackwell)"),
    "hpc_ops": KernelNeeds(min_sm=90, max_sm=90, why=" (HPC-Ops: Hopper)"),
    "aiter": KernelNeeds(vendor="amd"),
    "wave": KernelNeeds(vendor="amd"),
}
# SGLang's --quantization methods by the compute capability their kernels need on NVIDIA GPUs (each
# method's QuantizationConfig.get_min_capability in SGLang 0.5.23; methods that run from Volta on are
# left out).
SGLANG_QUANTIZATION: dict[str, KernelNeeds] = {
    name: KernelNeeds(vendor=None, min_sm=sm, why=f" (SGLang's {name} kernels)")
    for name, sm in {
        "awq": 75,
        "w8a8_int8": 75,
        "humming": 75,
        "fp8": 80,
        "mxfp4": 80,
        "awq_marlin": 80,
        "gptq_marlin": 80,
        "modelopt_fp4": 80,
        "modelopt_mixed": 80,
        "modelopt_fp8": 89,
        "w8a8_fp8": 89,
        "w4afp8": 90,
        "nvfp4_online": 100,
        "mxfp8": 100,
    }.items()
}
# Megatron's --attention-backend values that need a particular GPU.
MEGATRON_ATTENTION: dict[str, KernelNeeds] = {
    # Any vendor (ROCm builds of Transformer Engine have their own flash kernels); on NVIDIA, Ampere on.
    "flash": KernelNeeds(vendor=None, min_sm=80, why=" (FlashAttention 2: Ampere or newer)"),
}

# Megatron's number formats and kernels that need a particular GPU, by the flag that turns them on
# (slime trains in bf16 unless --fp16 is given: `--bf16` stands for that default).
MEGATRON_NUMERICS: dict[str, KernelNeeds] = {
    "--bf16": KernelNeeds(vendor=None, min_sm=80, why=" (bfloat16 arithmetic: Ampere or newer)"),
    "--fp8-format": KernelNeeds(vendor=None, min_sm=89, why=" (FP8 tensor cores: Ada, Hopper or newer)"),
    "--fp4-format": KernelNeeds(min_sm=100, why=" (NVFP4 tensor cores: Blackwell)"),
    "--moe-grouped-gemm": KernelNeeds(vendor=None, min_sm=80, why=" (Megatron's grouped GEMM kernels)"),
}


def _capability(sm: int) -> str:
    return f"{sm // 10}.{sm % 10}"


def backends_for(gpu: Gpu, table: dict[str, KernelNeeds], mla: bool) -> list[str]:
    """The table's backends the GPU (and model) can run."""
    return [name for name, needs in table.items() if needs.refuses(gpu, mla) is None]
