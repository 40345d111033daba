"""The GRPO trainer: rollouts of zero advantage take no training pass, and the update is TRL's."""

from types import SimpleNamespace

import pytest
import torch
from datasets import Dataset

from multiharness.grpo import SignalOnlyGRPOTrainer
from multiharness.model import load_model_and_tokenizer, make_tiny_model

from scripts import load_script


def same_reward(completions, **kwargs):
    return [1.0 for _ in completions]


def alternating_reward(completions, **kwargs):
    return [float(i % 2) for i in range(len(completions))]


def _trainer(tmp_path, reward) -> SignalOnlyGRPOTrainer:
    """The smoke preset's configuration (unscaled advantages, beta 0), a tiny model, one group of 2."""
    script = load_script("train/whitebox.py")
    args = SimpleNamespace(output=tmp_path, vllm_server=None, space_id=None, seed=0)
    config = script.grpo_config(args, script.PRESETS["smoke"], bf16=False)
    config.report_to = []
    model, tokenizer = load_model_and_tokenizer(make_tiny_model(tmp_path / "tiny"))
    dataset = Dataset.from_list([{"prompt": [{"role": "user", "content": "How many rows has data.csv?"}]}])
    return SignalOnlyGRPOTrainer(model=model, processing_class=tokenizer, args=config, train_dataset=dataset,
                                 reward_funcs=reward)


def _gradients(trainer, loss_of) -> list[torch.Tensor | None]:
    trainer.model.zero_grad(set_to_none=True)
    loss_of(trainer.model).backward()
    return [None if p.grad is None else p.grad.clone() for p in trainer.model.parameters()]


@pytest.mark.parametrize("reward, skipped", [
    (same_reward, True),         # one reward for the whole group: advantage 0, no gradient to compute
    (alternating_reward, False),  # 0 and 1: advantages -0.5 and 0.5, TRL's pass as usual
])
def test_a_micro_batch_without_signal_takes_no_pass_and_the_update_is_trls(tmp_path, reward, skipped):
    trainer = _trainer(tmp_path, reward)
    trainer.model.train()
    trainer.current_gradient_accumulation_steps = trainer.args.gradient_accumulation_steps  # set by train()
    row = trainer.train_dataset[0]
    inputs = trainer._generate_and_score_completions([row, row])
    assert bool((inputs["advantages"] == 0).all()) == skipped

    passes = []
    trl_pass = trainer._get_per_token_logps_and_entropies
    trainer._get_per_token_logps_and_entropies = lambda *a, **k: passes.append(1) or trl_pass(*a, **k)
    ours = _gradients(trainer, lambda model: trainer.compute_loss(model, inputs))
    trls = _gradients(trainer, lambda model: super(SignalOnlyGRPOTrainer, trainer).compute_loss(model, inputs))

    assert len(passes) == (1 if skipped else 2)  # TRL's own loss always takes its pass
    assert trainer._metrics["train"]["skipped_without_signal"] == [float(skipped)]
    # Every parameter gets a gradient (zero when skipped), as from TRL's loss: Adam steps the same.
    assert all(g is not None for g in ours) and all(g is not None for g in trls)
    assert all(torch.equal(a, b) for a, b in zip(ours, trls))
    assert any(g.abs().sum() > 0 for g in ours) != skipped
