"""The stage builders of `launch.plan.build`: one module per stage kind, over a shared `PlanBuilder`.

Commands per kind:
- prepare_data: `python -m t3rl_core.data --runtime-config R --out <stage>/data` (one `<split>.jsonl` each).
- prepare_model: synthetic → `python -m t3rl_core.chat.tiny --family F --out <hf> --corpus <data>`;
  otherwise a check that `<hf>/config.json` exists, failing with the `huggingface-cli download` line.
- convert_hf_to_torch_dist: slime's tools/convert_hf_to_torch_dist.py with the model's Megatron flags
  (torchrun over a node's GPUs when the weights do not fit one GPU) into the shared cache
  `<checkpoints_dir>/<model.name>-<hash of the HF source dir>_torch_dist`, complete when marked.
- train: `ray job submit … train.py …` (`launch.plan.slime_args`).
- convert_torch_dist_to_hf: slime's tools/convert_torch_dist_to_hf.py on the last saved iteration.
- eval: `python -m t3rl_core.eval …`, serving the checkpoint with SGLang when the engine needs it.
"""
