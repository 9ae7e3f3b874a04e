"""Training loops that are not RLlib's: ``launch/train.py`` runs ``launch.trainers.<algo.name>.train(cfg)``.

Each module's ``train(cfg: launch.schema.TrainConfig)`` owns its run folder
(``cfg.run_dir``, resumed when ``cfg.resume`` is set) and writes its agent as a
policy folder (`policies.checkpoints.write_policy`) that ``ckpt:<path>`` plays.
"""
