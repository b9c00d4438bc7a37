"""The shadow engine: a real vLLM server (CPU or GPU) that replays are sent to, and the demo."""
