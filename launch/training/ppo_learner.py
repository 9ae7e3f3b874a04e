"""`SharedMinibatchPPOLearner`: RLlib's PPO learner, with minibatches that split every module's batch alike.

Why it is here: with exploiters (``league=alphastar``) the learner trains several modules whose batches differ
in size (main has most of the games). RLlib's `MiniBatchCyclicIterator` takes ``minibatch_size`` rows from
*every* module in each minibatch and cycles the smaller batches until the largest is covered. So each update
passed over a 0.2-share exploiter's batch two or three times: more learner work (nearly twice the learn time of
an iteration of the default league; docs/pages/results/, the AlphaStar league's throughput), and more epochs on
the exploiters' data than ``algo.num_epochs`` says. `SharedMinibatchIterator` cuts each epoch into
ceil(rows / ``minibatch_size``) minibatches, and minibatch k holds the k-th equal part of every module's batch. Every row is used exactly
``num_epochs`` times, and a minibatch holds about ``minibatch_size`` rows in all.

Only a run with exploiters uses it (`launch.training.build`): a league without roles keeps RLlib's iterator and
its updates exactly. With several learners RLlib asks for a fixed number of minibatches, which keeps the learners
in step; then RLlib's own iterator is used.
"""
from __future__ import annotations

import math

from ray.rllib.algorithms.ppo.torch.ppo_torch_learner import PPOTorchLearner
from ray.rllib.policy.sample_batch import MultiAgentBatch
from ray.rllib.utils.minibatch_utils import MiniBatchIteratorBase


class SharedMinibatchIterator(MiniBatchIteratorBase):
    """See the module docstring."""

    def __init__(self, batch: MultiAgentBatch, *, num_epochs: int = 1, minibatch_size: int,
                 shuffle_batch_per_epoch: bool = True, num_total_minibatches: int = 0) -> None:
        super().__init__(batch, num_epochs=num_epochs, minibatch_size=minibatch_size,
                         shuffle_batch_per_epoch=shuffle_batch_per_epoch, num_total_minibatches=num_total_minibatches)
        self._batch = batch
        self._num_epochs = num_epochs
        self._shuffle = shuffle_batch_per_epoch
        rows = sum(len(b) for b in batch.policy_batches.values())
        self.parts = max(1, math.ceil(rows / minibatch_size))

    def __iter__(self):
        for epoch in range(self._num_epochs):
            if epoch and self._shuffle:  # each epoch goes through different minibatches, as RLlib's does
                for module_batch in self._batch.policy_batches.values():
                    module_batch.shuffle()
            for part in range(self.parts):
                minibatch = {}
                for module_id, module_batch in self._batch.policy_batches.items():
                    n = len(module_batch)
                    start, end = n * part // self.parts, n * (part + 1) // self.parts
                    if end > start:  # a module with fewer rows than parts sits out some minibatches
                        minibatch[module_id] = module_batch[start:end]
                if minibatch:
                    yield MultiAgentBatch(minibatch, len(self._batch))


class SharedMinibatchPPOLearner(PPOTorchLearner):
    def _create_iterator_if_necessary(self, *, training_data, num_total_minibatches: int = 0, num_epochs: int = 1,
                                      minibatch_size=None, shuffle_batch_per_epoch: bool = False, **kwargs):
        if training_data.data_iterators or num_total_minibatches or not minibatch_size:
            return super()._create_iterator_if_necessary(
                training_data=training_data, num_total_minibatches=num_total_minibatches, num_epochs=num_epochs,
                minibatch_size=minibatch_size, shuffle_batch_per_epoch=shuffle_batch_per_epoch, **kwargs)
        batch = self._make_batch_if_necessary(training_data=training_data)
        # As RLlib's own: the modules that are not trained leave the batch.
        for module_id in list(batch.policy_batches):
            if not self.should_module_be_updated(module_id, batch):
                del batch.policy_batches[module_id]
        if not batch.policy_batches:
            return {}
        batch = self._set_slicing_by_batch_id(batch, value=True)
        return SharedMinibatchIterator(batch, num_epochs=num_epochs, minibatch_size=minibatch_size,
                                       shuffle_batch_per_epoch=shuffle_batch_per_epoch and num_epochs > 1)
