"""TRL's `GRPOTrainer`, without the training pass of rollouts that carry no gradient.

With unscaled advantages (`scale_rewards="none"`, both GRPO scripts) a group whose rewards are
all equal has advantage 0 on every rollout, and with no reference model (`beta=0`) its loss is
advantage × ratio = 0: it adds nothing to the update. TRL runs its forward and backward pass all
the same, and on a CPU that pass is more than half of a whitebox step (RESULTS.md: loss forward
17%, backward 36%). `SignalOnlyGRPOTrainer` skips a micro-batch whose advantages are all zero:
the main job's GRPO stage, whose groups had no reward spread, went from 390 s to 183 s and saved
the same weights (RESULTS.md).

The update is TRL's: the skipped micro-batch's loss is a zero that reaches every parameter, so
the optimiser sees the same zero gradient (and Adam's moments decay as they would), and the DAPO
loss divides every other micro-batch by the token count of the whole step, which TRL counts
before any of them runs. What changes is logging: entropy and clipping are averaged over the
rollouts that trained. Written here because TRL has no such switch; its filters of
uninformative rollouts (`top_entropy_quantile`, the off-policy mask) act after the pass.
"""

from trl import GRPOTrainer

__all__ = ["NO_SIGNAL", "SignalOnlyGRPOTrainer"]

NO_SIGNAL = 1e-6
"""An advantage at most this large is zero, the float rounding of a group's mean: two right answers
one tool call apart (up to 17) differ by over 1e-3 in reward, so their advantages are over 1e-4."""


class SignalOnlyGRPOTrainer(GRPOTrainer):
    """`GRPOTrainer` that runs no forward or backward pass for a micro-batch of zero advantages (with `beta=0`)."""

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        mode = "train" if self.model.training else "eval"
        skip = self.beta == 0.0 and not self.aux_loss_enabled and inputs["advantages"].abs().max() <= NO_SIGNAL
        self._metrics[mode]["skipped_without_signal"].append(float(skip))
        if skip:
            return sum(p.sum() for p in model.parameters() if p.requires_grad) * 0.0
        return super().compute_loss(model, inputs, return_outputs, num_items_in_batch)
