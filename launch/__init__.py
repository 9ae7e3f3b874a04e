"""Commands: training, evaluation, play, league, export, serving and cluster launchers."""
import policies  # noqa: F401  (sets the OpenMP wait policy before anything loads torch)
