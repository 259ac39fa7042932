"""The choices `tracereplay replay` offers, apart from the replay code so the parser loads light
(this package's __init__ imports nothing)."""

from pipelines import schedule_kinds

REPLAY_SCHEDULES = schedule_kinds.BASES
SCHEDULE_CHOICES = schedule_kinds.NAMES  # the defaults and the DCPP rules by name
COSTS = ("tabulated", "fitted")
COMM_CHOICES = ("auto", "preset", "none")
