"""A user's bot module whose own top-level code ends the program (tests/evaluate/test_bot_exits.py)."""
import sys

sys.exit(0)
