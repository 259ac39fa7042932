"""The choices `tracereplay replay` offers, apart from the replay code so the parser loads light
(this package's __init__ imports nothing)."""

REPLAY_SCHEDULES = ("cpp", "dcpp", "vpp", "vpp_async", "vpp_pack")
# accepted besides the defaults: the two DCPP rules by name
SCHEDULE_CHOICES = (*REPLAY_SCHEDULES, "dcpp_sglang", "dcpp_vllm_ascend")
COSTS = ("tabulated", "fitted")
COMM_CHOICES = ("auto", "preset", "none")
