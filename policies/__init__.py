"""Agents: seed bots, RLModules and the league (from the environments issue on)."""
