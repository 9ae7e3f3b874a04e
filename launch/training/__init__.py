"""The training library the commands run: the typed config (`schema`) and its RLlib config (`build`), run folders
(`runs`) and the one run loop (`loop`), the batched EnvRunner (`sampler`), DQN's replay buffer (`replay_buffer`)
and learner (`dqn_learner`), the watchdog of a driver's processes (`watchdog`), and the trainers the loop runs
(`trainers`). Nothing here is a command: ``launch/*.py`` are."""
