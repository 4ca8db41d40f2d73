"""What slime imports through its `--custom-*-path` flags (`slime`: rollout, reward, logging and eval
hooks; `mis`: the train/inference mismatch hook of the policy loss; `advantage`: GRPO with the KL
penalty in the reward)."""
