"""The option strings slime's parsers accept, with how many value tokens each takes (data only).

slime parses its argv with `parse_known_args` everywhere, so an unknown or misspelled flag is silently
ignored; `launch.plan.slime_options` checks every built argv against these tables instead.

Sources (option names and arities read from the code, nothing else):
- MEGATRON: `megatron.training.arguments.add_megatron_arguments` of NVIDIA/Megatron-LM at 1dcf0daf (the
  commit slime's image pins) with slime's `docker/patch/latest/megatron*.patch` applied (which adds
  --post-self-attn-layernorm, --post-mlp-layernorm and --use-gated-attention); --help omitted.
- SLIME: `slime.utils.arguments.get_slime_extra_args_provider` of THUDM/slime at 624b824a, plus the four
  mode flags its `_pre_parse_mode` reads first (--train-backend, --debug-rollout-only, --debug-train-only,
  --load-debug-rollout-data).
- SGLANG: a curated subset of the `--sglang-<ServerArgs flag>` / `--router-*` names slime registers
  (slime notes, Appendix C); SGLang's full server flag set changes with every SGLang release, so only
  flags t3rl users are expected to set are listed. Add a name here to allow another one.

Arity: 0 = a switch, 1 = one value, "+" = one or more, "*" = any number, 3 = exactly three.
"""

from typing import Literal

Arity = Literal[0, 1, 3, "+", "*"]

# Megatron-LM 1dcf0daf + slime's patches.
MEGATRON: dict[Arity, str] = {
    0: """
--account-for-embedding-in-pipeline-split --account-for-loss-in-pipeline-split
--accumulate-allreduce-grads-in-fp32 --add-qkv-bias --adlr-autoresume --allow-ambiguous-pad-tokens
--apply-layernorm-1p --apply-query-key-layer-scaling --apply-residual-connection-post-layernorm
--apply-wd-to-qk-layernorm --async-save --attention-output-gate --attention-softmax-in-fp32
--auto-detect-ckpt-format --batch-invariant-mode --bert-no-binary-head --bf16
--biencoder-shared-query-context-model --cache-mla-latents --calc-ft-timeouts --calculate-per-token-loss
--check-for-large-grads --check-for-spiky-loss --checkpoint-activations --ckpt-assume-constant-structure
--ckpt-convert-update-legacy-dist-opt-format --ckpt-fully-parallel-load --ckpt-fully-parallel-save
--create-all-gather-group --cross-entropy-loss-fusion --data-parallel-random-init
--dataloader-defer-npy-index-mmap --dataloader-fast-cache-load --ddp-average-in-collective
--ddp-pad-buckets-for-high-nccl-busbw --ddp-reduce-scatter-with-fp32-accumulation
--decode-only-cuda-graphs --decrease-batch-size-if-needed --defer-embedding-wgrad-compute
--delay-wgrad-compute --deterministic-mode --dino-norm-last-layer
--disable-async-tensor-model-parallel-allreduce --disable-bf16-reduced-precision-matmul
--disable-bias-linear --disable-chunked-prefill --disable-ckpt-fully-parallel-save
--disable-clone-scatter-output-in-embedding --disable-fp8-wgrad --disable-gloo-process-groups
--disable-jit-fuser --disable-log-loss-scale-to-tensorboard --disable-mamba-mem-eff-path
--disable-manual-gc-eval --disable-msc --disable-straggler-on-startup --disable-strict-fsdp-dtensor-load
--disable-symmetric-registration --disable-tp-comm-bulk-dgrad --disable-tp-comm-bulk-wgrad
--disable-tp-comm-overlap-ag --disable-tp-comm-overlap-rs --disable-tp-comm-split-ag
--disable-tp-comm-split-rs --disable-use-tokenizer-model-from-checkpoint-args
--dist-ckpt-optim-fully-reshardable --dist-ckpt-save-pre-mcore-014
--distrib-optim-fully-reshardable-mem-efficient --distribute-saved-activations
--dsa-indexer-use-sparse-loss --enable-chunked-prefill --enable-cuda-graph --enable-experimental
--enable-ft-package --enable-full-sharding-in-hsdp --eod-mask-loss --ep-overlap-early-attn-memory-release
--exit-on-missing-checkpoint --exit-signal-handler --exit-signal-handler-for-dataloader
--external-cuda-graph --fake-process-group --fallback-to-eager-attn --fim-data
--fine-grained-activation-offloading --finetune --first-last-layers-bf16 --flash-decode --fp16
--fp16-lm-cross-entropy --fp32-residual-connection --fp4-param-gather --fp8-param-gather
--fsdp-double-buffer --fsdp-manual-registration --full-validation --grad-reduce-in-bf16
--group-query-attention --grpo-filter-groups-with-same-reward --hybrid-context-parallel
--inference-dynamic-batching --inference-dynamic-batching-track-paused-request-events
--inference-fuse-tp-communication --inference-rng-tracker --inference-wandb-logging
--init-method-xavier-uniform --init-model-with-meta-device --inprocess-empty-cuda-cache
--inprocess-restart --is-hybrid-model --keep-fp8-transpose-cache --langrl-external-server
--legacy-tokenizer --load-main-params-from-ckpt --log-device-memory-used --log-energy
--log-max-attention-logit --log-memory-to-tensorboard --log-num-zeros-in-grad --log-params-norm
--log-progress --log-straggler --log-throughput --log-timers-to-tensorboard
--log-validation-ppl-to-tensorboard --log-world-size-to-tensorboard --manual-gc --mock-data
--moe-apply-probs-on-input --moe-enable-deepep --moe-enable-routing-replay --moe-extended-tp
--moe-grouped-gemm --moe-layer-recompute --moe-pad-expert-input-to-capacity
--moe-pad-experts-for-cuda-graph-inference --moe-per-layer-logging --moe-permute-fusion
--moe-router-enable-expert-bias --moe-router-force-load-balancing --moe-router-fusion
--moe-router-padding-for-fp8 --moe-router-padding-for-quantization --moe-router-pre-softmax
--moe-shared-expert-gate --moe-shared-expert-overlap --moe-use-legacy-grouped-gemm --moe-use-upcycling
--mtp-standalone --multi-latent-attention --multiple-validation-sets --muon-no-split-qkv
--muon-use-nesterov --nccl-all-reduce-for-prefill --no-align-grad-reduce --no-align-param-gather
--no-async-tensor-model-parallel-allreduce --no-barrier-with-level-1-timing --no-bias-dropout-fusion
--no-bias-gelu-fusion --no-bias-swiglu-fusion --no-check-for-nan-in-loss-and-grad
--no-ckpt-fully-parallel-save --no-clone-scatter-output-in-embedding
--no-create-attention-mask-in-dataloader --no-data-sharding --no-fp8-wgrad
--no-gradient-accumulation-fusion --no-gradient-reduce-div-fusion --no-inference-wandb-logging
--no-initialization --no-langrl-external-server --no-load-optim --no-load-rng
--no-log-loss-scale-to-tensorboard --no-manual-gc-eval --no-masked-softmax-fusion --no-mmap-bin-files
--no-one-logger --no-overlap-p2p-communication --no-persist-layer-norm --no-pin-cpu-grads
--no-pin-cpu-params --no-position-embedding --no-rl-calculate-intra-group-similarity
--no-rl-inference-logprobs-is-correction --no-rl-offload-inference-model-weights-when-idle
--no-rl-offload-kv-cache-during-training --no-rl-partial-rollouts --no-rl-remove-kv-cache-during-training
--no-rl-reset-cuda-graphs --no-rl-skip-bos-token --no-rl-training-cuda-graphs --no-rl-use-sequence-packing
--no-rl-verify-model-weights-swap --no-rope-fusion --no-save-optim --no-save-rng
--no-scatter-gather-tensors-in-pipeline --no-strict-fsdp-dtensor-load --no-tp-comm-bulk-dgrad
--no-tp-comm-bulk-wgrad --no-tp-comm-overlap-ag --no-tp-comm-overlap-rs --no-tp-comm-split-ag
--no-tp-comm-split-rs --no-use-tokenizer-model-from-checkpoint-args --offload-optimizer-states
--one-logger-async --openai-gelu --optimizer-cpu-offload --output-bert-embeddings
--overlap-cpu-optimizer-d2h-h2d --overlap-grad-reduce --overlap-moe-expert-parallel-comm
--overlap-p2p-communication-warmup-flush --overlap-param-gather --overlap-param-gather-with-optimizer-step
--override-opt-param-scheduler --override-opt_param-scheduler --perform-rl-step --post-mlp-layernorm
--post-self-attn-layernorm --profile --qk-clip --qk-l2-norm --qk-layernorm --quick-geglu
--recompute-activations --record-memory-history --replication --reset-attention-mask --reset-position-ids
--retriever-score-scaling --reuse-grad-buf-for-mxfp8-param-ag --rl-calculate-intra-group-similarity
--rl-inference-logprobs-is-correction --rl-offload-inference-model-weights-when-idle
--rl-offload-kv-cache-during-training --rl-offload-optimizer-during-inference --rl-partial-rollouts
--rl-remove-kv-cache-during-training --rl-reset-cuda-graphs --rl-skip-bos-token --rl-training-cuda-graphs
--rl-use-sequence-packing --rl-verify-model-weights-swap --rotary-interleaved
--run-workload-inspector-server --sequence-parallel --sft --skip-train --squared-relu --swiglu
--te-rng-tracker --test-mode --tokenizer-hf-include-special-tokens --tokenizer-hf-use-fast
--tokenizer-sentencepiece-legacy --torch-fsdp2-no-reshard-after-forward --tp-comm-overlap
--tp-comm-overlap-rs-dgrad --trust-remote-code --untie-embeddings-and-output-weights --use-checkpoint-args
--use-checkpoint-opt-param-scheduler --use-checkpoint-opt_param-scheduler --use-cpu-initialization
--use-dist-ckpt --use-distributed-optimizer --use-flash-attn --use-fused-weighted-squared-relu
--use-gated-attention --use-kitchen-attention --use-legacy-models --use-legacy-static-engine
--use-mcore-models --use-megatron-fsdp --use-mp-args-from-checkpoint-args --use-nccl-ub
--use-one-sent-docs --use-persistent-ckpt-worker --use-precision-aware-optimizer --use-pytorch-profiler
--use-ring-exchange-p2p --use-rope-scaling --use-rotary-position-embeddings --use-sharp
--use-te-activation-func --use-torch-fsdp2 --use-torch-optimizer-for-cpu-offload --use-tp-pp-dp-mapping
--vision-pretraining
""",
    1: """
--activation-func-clamp-value --adam-beta1 --adam-beta2 --adam-eps --adlr-autoresume-interval
--app-tag-run-name --app-tag-run-version --attention-backend --attention-dropout --batch-size
--bert-embedder-type --bert-load --biencoder-projection-dim --block-data-path
--check-weight-hash-across-dp-replicas-interval --ckpt-convert-format --ckpt-convert-save --ckpt-format
--ckpt-step --classes-fraction --clip-grad --config-logger-dir --context-parallel-size
--cpu-offloading-num-layers --cross-entropy-fusion-impl --cuda-graph-impl --cuda-graph-warmup-steps
--data-args-path --data-cache-path --data-parallel-sharding-strategy --data-per-class-fraction
--dataloader-type --ddp-bucket-size --ddp-num-buckets --decoder-first-pipeline-num-layers
--decoder-last-pipeline-num-layers --decoder-num-layers --decoder-seq-length --decoupled-lr
--decoupled-min-lr --dino-bottleneck-size --dino-freeze-last-layer --dino-head-hidden-size
--dino-local-crops-number --dino-local-img-size --dino-teacher-temp --dino-warmup-teacher-temp
--dino-warmup-teacher-temp-epochs --dist-ckpt-format --dist-ckpt-strictness --distributed-backend
--distributed-timeout-minutes --distributed-timeout-seconds-after-init --dsa-indexer-head-dim
--dsa-indexer-loss-coeff --dsa-indexer-n-heads --dsa-indexer-topk --dump-param-to-param-group-map
--embedding-init-method-std --embedding-path --empty-unused-memory-level --encoder-num-layers
--encoder-seq-length --end-weight-decay --error-injection-rate --error-injection-type --eval-interval
--eval-iters --evidence-data-path --exit-duration-in-mins --exit-interval --exit-signal --exp-avg-dtype
--exp-avg-sq-dtype --experimental-attention-variant --expert-model-parallel-size
--expert-tensor-parallel-size --ffn-hidden-size --fim-eod-token --fim-fragment-rate --fim-middle-token
--fim-no-prefix --fim-pad-token --fim-prefix-token --fim-rate --fim-split-sample --fim-spm-rate
--fim-suffix-token --fp4-format --fp4-quantizer-factory --fp4-recipe --fp8-amax-compute-algo
--fp8-amax-history-len --fp8-format --fp8-interval --fp8-margin --fp8-quantizer-factory --fp8-recipe
--ft-num-warmup-iters --global-batch-size --glu-linear-offset --grpo-clamp-eps-lower
--grpo-clamp-eps-upper --grpo-entropy-term-weight --grpo-group-size --grpo-iterations --grpo-kl-beta
--grpo-prompts-per-step --head-lr-mult --heterogeneous-layers-config-encoded-json
--heterogeneous-layers-config-path --hidden-dropout --hidden-size --hybrid-attention-ratio
--hybrid-mlp-ratio --hybrid-override-pattern --hysteresis --ict-head-size --ict-load --img-h --img-w
--indexer-batch-size --indexer-log-interval --inference-batch-times-seqlen-threshold
--inference-coordinator-port --inference-dynamic-batching-block-size
--inference-dynamic-batching-buffer-size-gb --inference-dynamic-batching-cuda-graph-max-tokens
--inference-dynamic-batching-cuda-graph-mixed-prefill-count --inference-dynamic-batching-max-requests
--inference-dynamic-batching-max-tokens --inference-dynamic-batching-num-cuda-graphs
--inference-dynamic-batching-paused-buffer-size-gb --inference-dynamic-batching-unified-memory-level
--inference-logging-step-interval --inference-max-batch-size --inference-max-requests
--inference-max-seq-length --init-method-std --initial-loss-scale --inprocess-active-world-size
--inprocess-barrier-timeout --inprocess-completion-timeout --inprocess-granularity
--inprocess-hard-timeout --inprocess-heartbeat-interval --inprocess-heartbeat-timeout
--inprocess-last-call-wait --inprocess-max-iterations --inprocess-monitor-process-interval
--inprocess-monitor-thread-interval --inprocess-progress-watchdog-interval --inprocess-soft-timeout
--inprocess-termination-grace-time --iter-per-epoch --kitchen-attention-backend --kv-channels
--kv-lora-rank --langrl-env-config --langrl-inference-server-conversation-template
--langrl-inference-server-type --lazy-mpu-init --linear-attention-freq --linear-attention-type
--linear-conv-kernel-dim --linear-key-head-dim --linear-num-key-heads --linear-num-value-heads
--linear-value-head-dim --load --local-rank --log-interval --log-memory-interval --logging-level
--loss-scale --loss-scale-window --lr --lr-decay-iters --lr-decay-samples --lr-decay-style
--lr-warmup-fraction --lr-warmup-init --lr-warmup-iters --lr-warmup-samples --lr-wsd-decay-iters
--lr-wsd-decay-samples --lr-wsd-decay-style --main-grads-dtype --main-params-dtype
--make-vocab-size-divisible-by --mamba-head-dim --mamba-num-groups --mamba-num-heads --mamba-state-dim
--manual-gc-interval --mask-factor --mask-prob --mask-type --max-position-embeddings
--max-seqlen-per-dp-cp-rank --max-tokens-to-oom --memory-snapshot-path --merge-file --micro-batch-size
--microbatch-group-size-per-virtual-pipeline-stage --mid-level-dataset-surplus --min-loss-scale --min-lr
--min-offloaded-tensor-size --mlp-chunks-for-prefill --model-parallel-size --moe-deepep-num-sms
--moe-expert-capacity-factor --moe-ffn-hidden-size --moe-flex-dispatcher-backend --moe-hybridep-num-sms
--moe-input-jitter-eps --moe-latent-size --moe-layer-freq --moe-router-bias-update-rate --moe-router-dtype
--moe-router-force-biased --moe-router-group-topk --moe-router-num-groups --moe-router-score-function
--moe-router-topk --moe-router-topk-scaling-factor --moe-shared-expert-intermediate-size
--moe-token-dispatcher-type --moe-token-drop-policy --moe-upcycling-granularity --moe-z-loss-coeff
--mscale --mscale-all-dim --mtp-loss-scaling-factor --mtp-num-layers --muon-extra-scale-factor
--muon-fp32-matmul-prec --muon-momentum --muon-num-ns-steps --muon-scale-mode --muon-tp-mode
--nccl-communicator-config-path --no-rope-freq --no-weight-decay-cond-type --non-persistent-ckpt-type
--non-persistent-global-ckpt-dir --non-persistent-local-ckpt-algo --non-persistent-local-ckpt-dir
--non-persistent-save-interval --norm-epsilon --normalization --num-attention-heads --num-channels
--num-classes --num-dataset-builder-threads --num-distributed-optimizer-instances --num-experts
--num-layers --num-layers-at-end-in-bf16 --num-layers-at-start-in-bf16
--num-layers-per-virtual-pipeline-stage --num-query-groups --num-virtual-stages-per-pipeline-rank
--num-workers --object-storage-cache-path --one-logger-project --one-logger-run-name --onnx-safe
--optimizer --optimizer-offload-fraction --outer-dp-sharding-strategy --padded-vocab-size --patch-dim
--per-dataset-sequences-path --per-split-data-args-path --persistent-save-interval
--phase-transition-iterations --pipeline-model-parallel-comm-backend --pipeline-model-parallel-layout
--pipeline-model-parallel-size --position-embedding-type --pretrained-checkpoint --profile-step-end
--profile-step-start --q-lora-rank --qk-clip-alpha --qk-clip-threshold --qk-head-dim --qk-pos-emb-head-dim
--query-in-block-prob --recompute-granularity --recompute-method --recompute-num-layers --refit-method
--relative-attention-max-distance --relative-attention-num-buckets --replication-factor --replication-jump
--rerun-mode --result-rejected-tracker-filename --rl-default-temperature --rl-default-top-k
--rl-default-top-p --rl-importance-sampling-truncation-coef --rl-inference-expert-model-parallel-size
--rl-inference-expert-tensor-model-parallel-size --rl-inference-model-unified-memory-level
--rl-inference-pipeline-model-parallel-size --rl-inference-tensor-model-parallel-size
--rl-parallel-generation-tasks --rl-prompts-per-eval --rl-sequence-packing-algo
--rl-sequence-packing-max-sequences-per-bin --rope-scaling-factor --rope-type --rotary-base
--rotary-percent --rotary-scaling-factor --rotary-seq-len-interpolation-factor --sample-rate --save
--save-dgrads-interval --save-interval --save-retain-interval --save-wgrads-interval --seed --seq-length
--sft-tokenizer-prompt-format --sgd-momentum --sharp-enabled-group --short-seq-prob --softmax-type --split
--start-weight-decay --straggler-ctrlr-port --straggler-minmax-count --suggested-communication-unit-size
--swin-backbone-type --symmetric-ar-type --te-precision-config-file --tensor-model-parallel-size
--tensorboard-dir --tensorboard-log-interval --tensorboard-queue-size --tiktoken-num-special-tokens
--tiktoken-pattern --timing-log-level --timing-log-option --titles-data-path --tokenizer-metadata
--tokenizer-model --tokenizer-type --tp-comm-bootstrap-backend --tp-comm-overlap-cfg --train-iters
--train-samples --train-sync-interval --transformer-impl --v-head-dim --vision-backbone-type
--vision-pretraining-type --vocab-extra-ids --vocab-file --vocab-size --wandb-entity --wandb-exp-name
--wandb-project --wandb-save-dir --warmup --weight-decay --weight-decay-incr-style --wgrad-deferral-limit
--window-attn-skip-freq --window-size --yaml-cfg
""",
    "+": """
--cp-comm-type --cuda-graph-scope --hierarchical-context-parallel-sizes --iterations-to-skip
--moe-aux-loss-coeff --moe-router-load-balancing-type --mrope-section --offload-modules --profile-ranks
--recompute-modules --retriever-report-topk-accuracies --tiktoken-special-tokens
--tokenizer-special-tokens
""",
    "*": """
--data-path --high-priority-stream-groups --spec --test-data-path --train-data-path --valid-data-path
""",
    3: """
--rampup-batch-size
""",
}

# slime 624b824a.
SLIME: dict[Arity, str] = {
    0: """
--allgather-cp --apply-chat-template --balance-by-flops --balance-data --check-weight-update-equal
--ci-disable-kl-checker --ci-test --colocate --debug-rollout-only --debug-train-only
--disable-compute-advantages-and-returns --disable-grpo-std-normalization --disable-rewards-normalization
--disable-rollout-global-dataset --disable-wandb-random-suffix --enable-mtp-training --freeze-indexer
--get-mismatch-metrics --group-rm --keep-old-actor --log-correct-samples --log-multi-turn --log-passrate
--mask-offpolicy-in-partial-rollout --no-offload-rollout --no-offload-train --normalize-advantages
--offload --offload-rollout --offload-train --partial-rollout --recompute-loss-function --release-train
--reset-optimizer-states --rollout-shuffle --rollout-skip-special-tokens --skip-eval-before-train
--update-weight-disk-keep-files --use-distributed-post --use-dynamic-batch-size --use-fault-tolerance
--use-kl-loss --use-opd --use-opsm --use-rollout-entropy --use-rollout-logprobs
--use-rollout-routing-replay --use-routing-replay --use-stateless-adam --use-tensorboard --use-tis
--use-unbiased-kl --use-wandb --wandb-always-use-train-step
""",
    1: """
--actor-num-gpus-per-node --actor-num-nodes --advantage-estimator --apply-chat-template-kwargs
--buffer-filter-path --ci-load-grad-norm --ci-save-grad-norm --ci-train-rollout-logprob-abs-diff-threshold
--custom-advantage-function-path --custom-config-path --custom-convert-samples-to-train-data-path
--custom-eval-rollout-log-function-path --custom-generate-function-path --custom-loss-function-path
--custom-megatron-before-log-prob-hook-path --custom-megatron-before-train-step-hook-path
--custom-megatron-init-path --custom-model-provider-path --custom-pg-loss-reducer-function-path
--custom-reward-post-process-path --custom-rm-path --custom-rollout-log-function-path
--custom-tis-function-path --custom-update-weight-post-write-path --data-pad-size-multiplier
--data-source-path --dump-details --dynamic-sampling-filter-path --entropy-coef --eps-clip --eps-clip-c
--eps-clip-high --eval-config --eval-function-path --eval-input-key --eval-label-key
--eval-max-context-len --eval-max-prompt-len --eval-max-response-len --eval-min-new-tokens
--eval-reward-key --eval-temperature --eval-tool-key --eval-top-k --eval-top-p
--fetch-trajectory-retry-times --gamma --hf-checkpoint --http-proxy --input-key --kl-coef --kl-loss-coef
--kl-loss-type --label-key --lambd --load-debug-rollout-data --load-debug-rollout-data-subsample
--load-forge-rollout-data --log-probs-chunk-size --log-probs-max-tokens-per-gpu --log-reward-category
--loss-mask-type --loss-type --max-tokens-per-gpu --megatron-config-path --memory-recorder
--memory-snapshot-dir --memory-snapshot-num-steps --metadata-key --min-batch-collection-ratio --model-name
--multimodal-keys --n-samples-per-eval-prompt --n-samples-per-prompt --num-critic-only-steps --num-epoch
--num-gpus-per-node --num-rollout --num-steps-per-rollout --opd-kl-coef --opd-teacher-ckpt-step
--opd-teacher-load --opd-type --opsm-delta --over-sampling-batch-size --prompt-data --qwen-gdn-backend
--ref-ckpt-step --ref-load --ref-update-interval --reward-key --rm-type --rm-url
--rollout-all-samples-process-path --rollout-batch-size --rollout-buffer-url
--rollout-data-postprocess-path --rollout-data-transport --rollout-function-path
--rollout-health-check-first-wait --rollout-health-check-interval --rollout-health-check-timeout
--rollout-max-context-len --rollout-max-prompt-len --rollout-max-response-len --rollout-num-gpus
--rollout-num-gpus-per-engine --rollout-sample-filter-path --rollout-sample-hook-path --rollout-seed
--rollout-task-type --rollout-temperature --rollout-top-k --rollout-top-p --save-debug-rollout-data
--save-debug-train-data --save-hf --start-rollout-id --tb-experiment-name --tb-project-name --tis-clip
--tis-clip-low --tool-key --train-backend --train-env-vars --update-weight-buffer-size
--update-weight-delta-checksum --update-weight-delta-encoding --update-weight-disk-dir
--update-weight-local-checkpoint-dir --update-weight-mode --update-weight-transport
--update-weights-interval --value-clip --wandb-dir --wandb-group --wandb-host --wandb-key --wandb-mode
--wandb-run-id --wandb-team
""",
    "+": """
--eval-prompt-data --megatron-deepgemm-forward-layers --megatron-deepgemm-forward-modules
--megatron-deepgemm-moe-forward-layers --megatron-deepgemm-moe-forward-modules --profile-target
--rollout-external-engine-addrs --rollout-stop --rollout-stop-token-ids
""",
    "*": """
--freeze-params-name-list --only-train-params-name-list
""",
}

# SGLang and router flags as slime re-exports them (curated).
SGLANG: dict[Arity, str] = {
    0: """
--sglang-disable-cuda-graph --sglang-disable-custom-all-reduce --sglang-disable-radix-cache
--sglang-enable-deterministic-inference --sglang-enable-dp-attention --sglang-enable-fp32-moe-router
--sglang-enable-metrics --sglang-enable-mixed-chunk --sglang-enable-torch-compile
""",
    1: """
--prefill-num-servers --router-balance-abs-threshold --router-balance-rel-threshold --router-log-level
--router-policy --sglang-attention-backend --sglang-chunked-prefill-size --sglang-config
--sglang-context-length --sglang-cuda-graph-max-bs --sglang-decode-attention-backend
--sglang-decode-log-interval --sglang-deepep-mode --sglang-dp-size --sglang-ep-size
--sglang-kv-cache-dtype --sglang-log-level --sglang-max-running-requests --sglang-max-total-tokens
--sglang-mem-fraction-static --sglang-moe-a2a-backend --sglang-moe-dense-tp-size
--sglang-moe-runner-backend --sglang-page-size --sglang-pp-size --sglang-prefill-attention-backend
--sglang-quantization --sglang-router-ip --sglang-router-port --sglang-router-request-timeout-secs
--sglang-schedule-policy --sglang-server-concurrency --sglang-speculative-algorithm
--sglang-speculative-draft-model-path --sglang-speculative-eagle-topk
--sglang-speculative-num-draft-tokens --sglang-speculative-num-steps --sglang-watchdog-timeout
""",
    "+": """
--sglang-cuda-graph-bs
""",
}
