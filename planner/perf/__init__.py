"""Performance model: pure functions from a model's architecture and a hardware row to memory,
bytes moved and FLOPs per step."""
