#!/usr/bin/env bash
# Plan of run 'bfcl_env_tuning_4stage' (/RUN), written by t3rl. Each stage's own copy is
# stages/<name>/command.sh; `t3rl run --run-dir <this dir>` runs them with resume and logs.
set -euo pipefail

# ---- stage data (prepare_data): bfcl_multi_turn: bfcl_train_base, bfcl_val, bfcl_train, bfcl_unseen
(
cache=<cache>/data/bfcl_multi_turn-78032c8a7aec87cc
if /venv/bin/python -m t3rl_core.data.check "$cache" 2>/dev/null; then echo "data: $cache (prepared before: same content key)"
else
  mkdir -p "$(dirname "$cache")"
  tmp=$(mktemp -d "$cache.tmp.XXXXXX") && chmod 755 "$tmp"  # readable by whoever shares the cache
  /venv/bin/python -m t3rl_core.data --runtime-config /RUN/runtime/data.yaml --out "$tmp"
  if [ -e "$cache" ] && ! /venv/bin/python -m t3rl_core.data.check "$cache"; then rm -rf "$cache"; fi  # a broken copy
  mv -T "$tmp" "$cache" 2>/dev/null || rm -rf "$tmp"  # else a concurrent run stored it first
fi
rm -rf /RUN/stages/data/data && ln -s "$cache" /RUN/stages/data/data
)

# ---- stage to_torch_dist (convert_hf_to_torch_dist): qwen2_5_7b_instruct: HF → torch_dist (1 GPU)
# skipped by t3rl when these exist: /BASE/checkpoints/qwen2_5_7b_instruct-30b1f35e312b_torch_dist/latest_checkpointed_iteration.txt /BASE/checkpoints/qwen2_5_7b_instruct-30b1f35e312b_torch_dist/.t3rl-complete
(
export PYTHONPATH=/root/Megatron-LM:/root/slime
cd /root/slime
rm -f /BASE/checkpoints/qwen2_5_7b_instruct-30b1f35e312b_torch_dist/.t3rl-complete
python3 /root/slime/tools/convert_hf_to_torch_dist.py \
    --swiglu \
    --num-layers 28 \
    --hidden-size 3584 \
    --ffn-hidden-size 18944 \
    --num-attention-heads 28 \
    --group-query-attention \
    --num-query-groups 4 \
    --use-rotary-position-embeddings \
    --disable-bias-linear \
    --add-qkv-bias \
    --normalization RMSNorm \
    --norm-epsilon 1e-06 \
    --rotary-base 1000000 \
    --vocab-size 152064 \
    --untie-embeddings-and-output-weights \
    --hf-checkpoint /BASE/models/Qwen2.5-7B-Instruct \
    --save /BASE/checkpoints/qwen2_5_7b_instruct-30b1f35e312b_torch_dist
touch /BASE/checkpoints/qwen2_5_7b_instruct-30b1f35e312b_torch_dist/.t3rl-complete
)

# ---- stage format (train): rl bfcl_stage1 on bfcl_train_base: train.py, 8 GPUs
ray start --head --port 6379 --dashboard-port 8265 --num-gpus 8 --disable-usage-stats
trap 'ray stop' EXIT
(
ray job submit \
    --address=http://127.0.0.1:8265 \
    '--runtime-env-json={"env_vars": {"PYTHONPATH": "/root/Megatron-LM:/T3RL:/root/slime", "CUDA_DEVICE_MAX_CONNECTIONS": "1", "TENSORBOARD_DIR": "/RUN/stages/format/tensorboard"}}' \
    -- python3 /root/slime/train.py \
    --actor-num-nodes 1 \
    --actor-num-gpus-per-node 8 \
    --rollout-num-gpus 8 \
    --colocate \
    --swiglu \
    --num-layers 28 \
    --hidden-size 3584 \
    --ffn-hidden-size 18944 \
    --num-attention-heads 28 \
    --group-query-attention \
    --num-query-groups 4 \
    --use-rotary-position-embeddings \
    --disable-bias-linear \
    --add-qkv-bias \
    --normalization RMSNorm \
    --norm-epsilon 1e-06 \
    --rotary-base 1000000 \
    --vocab-size 152064 \
    --untie-embeddings-and-output-weights \
    --hf-checkpoint /BASE/models/Qwen2.5-7B-Instruct \
    --ref-load /BASE/checkpoints/qwen2_5_7b_instruct-30b1f35e312b_torch_dist \
    --load /RUN/stages/format/checkpoint \
    --save /RUN/stages/format/checkpoint \
    --save-interval 20 \
    --prompt-data /RUN/stages/data/data/bfcl_train_base.jsonl \
    --input-key prompt \
    --metadata-key metadata \
    --rollout-shuffle \
    --num-rollout 800 \
    --rollout-batch-size 32 \
    --n-samples-per-prompt 16 \
    --rollout-max-response-len 10000 \
    --rollout-temperature 1.0 \
    --global-batch-size 512 \
    --dynamic-sampling-filter-path slime.rollout.filter_hub.dynamic_sampling_filters.check_reward_nonzero_std \
    --balance-data \
    --rollout-seed 42 \
    --optimizer adam \
    --lr 1e-06 \
    --lr-decay-style constant \
    --weight-decay 0.01 \
    --adam-beta1 0.9 \
    --adam-beta2 0.999 \
    --clip-grad 1.0 \
    --advantage-estimator grpo \
    --use-kl-loss \
    --kl-loss-coef 0.0 \
    --kl-loss-type low_var_kl \
    --entropy-coef 0.001 \
    --eps-clip 0.2 \
    --eps-clip-high 0.28 \
    --get-mismatch-metrics \
    --custom-tis-function-path t3rl_core.hooks.mis.compute_mis_weights_with_cp \
    --use-tensorboard \
    --tensor-model-parallel-size 2 \
    --sequence-parallel \
    --pipeline-model-parallel-size 1 \
    --context-parallel-size 1 \
    --expert-model-parallel-size 1 \
    --expert-tensor-parallel-size 1 \
    --recompute-granularity full \
    --recompute-method uniform \
    --recompute-num-layers 2 \
    --use-dynamic-batch-size \
    --max-tokens-per-gpu 2048 \
    --log-probs-chunk-size 4096 \
    --recompute-loss-function \
    --eval-interval 5 \
    --eval-prompt-data bfcl_val /RUN/stages/data/data/bfcl_val.jsonl \
    --n-samples-per-eval-prompt 1 \
    --eval-max-response-len 20000 \
    --rollout-num-gpus-per-engine 1 \
    --sglang-mem-fraction-static 0.8 \
    --sglang-attention-backend fa3 \
    --sglang-chunked-prefill-size 4096 \
    --attention-dropout 0.0 \
    --hidden-dropout 0.0 \
    --accumulate-allreduce-grads-in-fp32 \
    --attention-softmax-in-fp32 \
    --attention-backend flash \
    --seed 42 \
    --custom-generate-function-path t3rl_core.hooks.slime.generate \
    --custom-rollout-log-function-path t3rl_core.hooks.slime.log_rollout_data \
    --custom-eval-rollout-log-function-path t3rl_core.hooks.slime.log_eval_rollout_data \
    --eval-function-path t3rl_core.hooks.slime.eval_rollout_with_metrics \
    --custom-config-path /RUN/runtime/format.yaml \
    --dump-details /RUN/stages/format/rollouts
)
ray stop
trap - EXIT

# ---- stage basic (train): rl bfcl_stage1 on bfcl_train_base: train.py, 8 GPUs
ray start --head --port 6379 --dashboard-port 8265 --num-gpus 8 --disable-usage-stats
trap 'ray stop' EXIT
(
ray job submit \
    --address=http://127.0.0.1:8265 \
    '--runtime-env-json={"env_vars": {"PYTHONPATH": "/root/Megatron-LM:/T3RL:/root/slime", "CUDA_DEVICE_MAX_CONNECTIONS": "1", "TENSORBOARD_DIR": "/RUN/stages/basic/tensorboard"}}' \
    -- python3 /root/slime/train.py \
    --actor-num-nodes 1 \
    --actor-num-gpus-per-node 8 \
    --rollout-num-gpus 8 \
    --colocate \
    --swiglu \
    --num-layers 28 \
    --hidden-size 3584 \
    --ffn-hidden-size 18944 \
    --num-attention-heads 28 \
    --group-query-attention \
    --num-query-groups 4 \
    --use-rotary-position-embeddings \
    --disable-bias-linear \
    --add-qkv-bias \
    --normalization RMSNorm \
    --norm-epsilon 1e-06 \
    --rotary-base 1000000 \
    --vocab-size 152064 \
    --untie-embeddings-and-output-weights \
    --hf-checkpoint /BASE/models/Qwen2.5-7B-Instruct \
    --ref-load /RUN/stages/format/checkpoint \
    --load /RUN/stages/basic/checkpoint \
    --save /RUN/stages/basic/checkpoint \
    --save-interval 20 \
    --prompt-data /RUN/stages/data/data/bfcl_train_base.jsonl \
    --input-key prompt \
    --metadata-key metadata \
    --rollout-shuffle \
    --num-rollout 800 \
    --rollout-batch-size 32 \
    --n-samples-per-prompt 16 \
    --rollout-max-response-len 10000 \
    --rollout-temperature 1.0 \
    --global-batch-size 512 \
    --dynamic-sampling-filter-path slime.rollout.filter_hub.dynamic_sampling_filters.check_reward_nonzero_std \
    --balance-data \
    --rollout-seed 42 \
    --optimizer adam \
    --lr 1e-06 \
    --lr-decay-style constant \
    --weight-decay 0.01 \
    --adam-beta1 0.9 \
    --adam-beta2 0.999 \
    --clip-grad 1.0 \
    --advantage-estimator grpo \
    --use-kl-loss \
    --kl-loss-coef 0.0 \
    --kl-loss-type low_var_kl \
    --entropy-coef 0.001 \
    --eps-clip 0.2 \
    --eps-clip-high 0.28 \
    --get-mismatch-metrics \
    --custom-tis-function-path t3rl_core.hooks.mis.compute_mis_weights_with_cp \
    --use-tensorboard \
    --tensor-model-parallel-size 2 \
    --sequence-parallel \
    --pipeline-model-parallel-size 1 \
    --context-parallel-size 1 \
    --expert-model-parallel-size 1 \
    --expert-tensor-parallel-size 1 \
    --recompute-granularity full \
    --recompute-method uniform \
    --recompute-num-layers 2 \
    --use-dynamic-batch-size \
    --max-tokens-per-gpu 2048 \
    --log-probs-chunk-size 4096 \
    --recompute-loss-function \
    --eval-interval 5 \
    --eval-prompt-data bfcl_val /RUN/stages/data/data/bfcl_val.jsonl \
    --n-samples-per-eval-prompt 1 \
    --eval-max-response-len 20000 \
    --rollout-num-gpus-per-engine 1 \
    --sglang-mem-fraction-static 0.8 \
    --sglang-attention-backend fa3 \
    --sglang-chunked-prefill-size 4096 \
    --attention-dropout 0.0 \
    --hidden-dropout 0.0 \
    --accumulate-allreduce-grads-in-fp32 \
    --attention-softmax-in-fp32 \
    --attention-backend flash \
    --seed 42 \
    --custom-generate-function-path t3rl_core.hooks.slime.generate \
    --custom-rollout-log-function-path t3rl_core.hooks.slime.log_rollout_data \
    --custom-eval-rollout-log-function-path t3rl_core.hooks.slime.log_eval_rollout_data \
    --eval-function-path t3rl_core.hooks.slime.eval_rollout_with_metrics \
    --custom-config-path /RUN/runtime/basic.yaml \
    --dump-details /RUN/stages/basic/rollouts
)
ray stop
trap - EXIT

# ---- stage complex (train): rl bfcl_stage2 on bfcl_train: train.py, 8 GPUs
ray start --head --port 6379 --dashboard-port 8265 --num-gpus 8 --disable-usage-stats
trap 'ray stop' EXIT
(
ray job submit \
    --address=http://127.0.0.1:8265 \
    '--runtime-env-json={"env_vars": {"PYTHONPATH": "/root/Megatron-LM:/T3RL:/root/slime", "CUDA_DEVICE_MAX_CONNECTIONS": "1", "TENSORBOARD_DIR": "/RUN/stages/complex/tensorboard"}}' \
    -- python3 /root/slime/train.py \
    --actor-num-nodes 1 \
    --actor-num-gpus-per-node 8 \
    --rollout-num-gpus 8 \
    --colocate \
    --swiglu \
    --num-layers 28 \
    --hidden-size 3584 \
    --ffn-hidden-size 18944 \
    --num-attention-heads 28 \
    --group-query-attention \
    --num-query-groups 4 \
    --use-rotary-position-embeddings \
    --disable-bias-linear \
    --add-qkv-bias \
    --normalization RMSNorm \
    --norm-epsilon 1e-06 \
    --rotary-base 1000000 \
    --vocab-size 152064 \
    --untie-embeddings-and-output-weights \
    --hf-checkpoint /BASE/models/Qwen2.5-7B-Instruct \
    --ref-load /RUN/stages/basic/checkpoint \
    --load /RUN/stages/complex/checkpoint \
    --save /RUN/stages/complex/checkpoint \
    --save-interval 20 \
    --prompt-data /RUN/stages/data/data/bfcl_train.jsonl \
    --input-key prompt \
    --metadata-key metadata \
    --rollout-shuffle \
    --num-rollout 800 \
    --rollout-batch-size 32 \
    --n-samples-per-prompt 16 \
    --rollout-max-response-len 10000 \
    --rollout-temperature 1.0 \
    --global-batch-size 512 \
    --dynamic-sampling-filter-path slime.rollout.filter_hub.dynamic_sampling_filters.check_reward_nonzero_std \
    --balance-data \
    --rollout-seed 42 \
    --optimizer adam \
    --lr 1e-06 \
    --lr-decay-style constant \
    --weight-decay 0.01 \
    --adam-beta1 0.9 \
    --adam-beta2 0.999 \
    --clip-grad 1.0 \
    --advantage-estimator grpo \
    --use-kl-loss \
    --kl-loss-coef 0.0 \
    --kl-loss-type low_var_kl \
    --entropy-coef 0.001 \
    --eps-clip 0.2 \
    --eps-clip-high 0.28 \
    --get-mismatch-metrics \
    --custom-tis-function-path t3rl_core.hooks.mis.compute_mis_weights_with_cp \
    --use-tensorboard \
    --tensor-model-parallel-size 2 \
    --sequence-parallel \
    --pipeline-model-parallel-size 1 \
    --context-parallel-size 4 \
    --expert-model-parallel-size 1 \
    --expert-tensor-parallel-size 1 \
    --recompute-granularity full \
    --recompute-method uniform \
    --recompute-num-layers 2 \
    --use-dynamic-batch-size \
    --max-tokens-per-gpu 2048 \
    --log-probs-chunk-size 4096 \
    --recompute-loss-function \
    --eval-interval 5 \
    --eval-prompt-data bfcl_val /RUN/stages/data/data/bfcl_val.jsonl \
    --n-samples-per-eval-prompt 1 \
    --eval-max-response-len 20000 \
    --rollout-num-gpus-per-engine 1 \
    --sglang-mem-fraction-static 0.8 \
    --sglang-attention-backend fa3 \
    --sglang-chunked-prefill-size 4096 \
    --attention-dropout 0.0 \
    --hidden-dropout 0.0 \
    --accumulate-allreduce-grads-in-fp32 \
    --attention-softmax-in-fp32 \
    --attention-backend flash \
    --seed 42 \
    --custom-generate-function-path t3rl_core.hooks.slime.generate \
    --custom-rollout-log-function-path t3rl_core.hooks.slime.log_rollout_data \
    --custom-eval-rollout-log-function-path t3rl_core.hooks.slime.log_eval_rollout_data \
    --eval-function-path t3rl_core.hooks.slime.eval_rollout_with_metrics \
    --custom-config-path /RUN/runtime/complex.yaml \
    --dump-details /RUN/stages/complex/rollouts
)
ray stop
trap - EXIT

# ---- stage aligned (train): rl bfcl_stage2 on bfcl_train: train.py, 8 GPUs
ray start --head --port 6379 --dashboard-port 8265 --num-gpus 8 --disable-usage-stats
trap 'ray stop' EXIT
(
ray job submit \
    --address=http://127.0.0.1:8265 \
    '--runtime-env-json={"env_vars": {"PYTHONPATH": "/root/Megatron-LM:/T3RL:/root/slime", "CUDA_DEVICE_MAX_CONNECTIONS": "1", "TENSORBOARD_DIR": "/RUN/stages/aligned/tensorboard"}}' \
    -- python3 /root/slime/train.py \
    --actor-num-nodes 1 \
    --actor-num-gpus-per-node 8 \
    --rollout-num-gpus 8 \
    --colocate \
    --swiglu \
    --num-layers 28 \
    --hidden-size 3584 \
    --ffn-hidden-size 18944 \
    --num-attention-heads 28 \
    --group-query-attention \
    --num-query-groups 4 \
    --use-rotary-position-embeddings \
    --disable-bias-linear \
    --add-qkv-bias \
    --normalization RMSNorm \
    --norm-epsilon 1e-06 \
    --rotary-base 1000000 \
    --vocab-size 152064 \
    --untie-embeddings-and-output-weights \
    --hf-checkpoint /BASE/models/Qwen2.5-7B-Instruct \
    --ref-load /RUN/stages/complex/checkpoint \
    --load /RUN/stages/aligned/checkpoint \
    --save /RUN/stages/aligned/checkpoint \
    --save-interval 20 \
    --prompt-data /RUN/stages/data/data/bfcl_train.jsonl \
    --input-key prompt \
    --metadata-key metadata \
    --rollout-shuffle \
    --num-rollout 800 \
    --rollout-batch-size 32 \
    --n-samples-per-prompt 16 \
    --rollout-max-response-len 10000 \
    --rollout-temperature 1.0 \
    --global-batch-size 512 \
    --dynamic-sampling-filter-path slime.rollout.filter_hub.dynamic_sampling_filters.check_reward_nonzero_std \
    --balance-data \
    --rollout-seed 42 \
    --optimizer adam \
    --lr 1e-06 \
    --lr-decay-style constant \
    --weight-decay 0.01 \
    --adam-beta1 0.9 \
    --adam-beta2 0.999 \
    --clip-grad 1.0 \
    --advantage-estimator grpo \
    --use-kl-loss \
    --kl-loss-coef 0.0 \
    --kl-loss-type low_var_kl \
    --entropy-coef 0.001 \
    --eps-clip 0.2 \
    --eps-clip-high 0.28 \
    --get-mismatch-metrics \
    --custom-tis-function-path t3rl_core.hooks.mis.compute_mis_weights_with_cp \
    --use-tensorboard \
    --tensor-model-parallel-size 2 \
    --sequence-parallel \
    --pipeline-model-parallel-size 1 \
    --context-parallel-size 4 \
    --expert-model-parallel-size 1 \
    --expert-tensor-parallel-size 1 \
    --recompute-granularity full \
    --recompute-method uniform \
    --recompute-num-layers 2 \
    --use-dynamic-batch-size \
    --max-tokens-per-gpu 2048 \
    --log-probs-chunk-size 4096 \
    --recompute-loss-function \
    --eval-interval 5 \
    --eval-prompt-data bfcl_val /RUN/stages/data/data/bfcl_val.jsonl \
    --n-samples-per-eval-prompt 1 \
    --eval-max-response-len 20000 \
    --rollout-num-gpus-per-engine 1 \
    --sglang-mem-fraction-static 0.8 \
    --sglang-attention-backend fa3 \
    --sglang-chunked-prefill-size 4096 \
    --attention-dropout 0.0 \
    --hidden-dropout 0.0 \
    --accumulate-allreduce-grads-in-fp32 \
    --attention-softmax-in-fp32 \
    --attention-backend flash \
    --seed 42 \
    --custom-generate-function-path t3rl_core.hooks.slime.generate \
    --custom-rollout-log-function-path t3rl_core.hooks.slime.log_rollout_data \
    --custom-eval-rollout-log-function-path t3rl_core.hooks.slime.log_eval_rollout_data \
    --eval-function-path t3rl_core.hooks.slime.eval_rollout_with_metrics \
    --custom-config-path /RUN/runtime/aligned.yaml \
    --dump-details /RUN/stages/aligned/rollouts
)
ray stop
trap - EXIT

# ---- stage aligned_hf (convert_torch_dist_to_hf): last checkpoint of aligned → HF
# skipped by t3rl when these exist: /RUN/stages/aligned_hf/hf/.t3rl-complete
(
export PYTHONPATH=/root/Megatron-LM:/root/slime
cd /root/slime
ITER=$(cat /RUN/stages/aligned/checkpoint/latest_checkpointed_iteration.txt)
python3 /root/slime/tools/convert_torch_dist_to_hf.py --input-dir "/RUN/stages/aligned/checkpoint/iter_$(printf %07d "$ITER")" --output-dir /RUN/stages/aligned_hf/hf --origin-hf-dir /BASE/models/Qwen2.5-7B-Instruct --vocab-size 152064 --force
touch /RUN/stages/aligned_hf/hf/.t3rl-complete
)

# ---- stage eval (eval): sglang eval of aligned_hf on bfcl_unseen
(
# The SGLang server of this eval, in the background; stopped whenever this script exits.
mkdir -p /RUN/stages/eval
server_parent=$BASHPID
/venv/bin/python -m t3rl_core.lifetime --parent "$server_parent" \
    -- /venv/bin/python -m sglang.launch_server \
    --model-path /RUN/stages/aligned_hf/hf \
    --tp 1 \
    --tool-call-parser qwen25 \
    --host 127.0.0.1 \
    --port 30000 \
    >>/RUN/stages/eval/server.log 2>&1 &
server_pid=$!
trap 'kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true' EXIT
/venv/bin/python -m t3rl_core.eval \
    --runtime-config /RUN/runtime/eval.yaml \
    --eval-config /RUN/runtime/eval.eval.yaml \
    --data /RUN/stages/data/data/bfcl_unseen.jsonl \
    --out /RUN/stages/eval \
    --resume \
    --no-progress \
    --url http://127.0.0.1:30000 \
    --server-pid "$server_pid"
)
