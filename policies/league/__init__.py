"""Who plays whom while training: the opponent pool of frozen snapshots and scripted bots."""
