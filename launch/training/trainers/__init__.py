"""Training loops that are not RLlib's: ``launch/train.py`` runs ``launch.training.trainers.<algo.name>.train(cfg)``.

Each module's ``train(cfg: launch.training.schema.TrainConfig)`` checks what is its own
and hands a `launch.training.loop.Trainer` (its state on disk, its step, its summary) to
`launch.training.loop.run`, which owns the run folder (``cfg.run_dir``, resumed when
``cfg.resume`` is set), the budget, saves on Ctrl-C and SIGTERM, the logs and the
final evaluation. Each writes its agent as a policy folder
(`policies.checkpoints.write_policy`) that ``ckpt:<path>`` plays.
"""
