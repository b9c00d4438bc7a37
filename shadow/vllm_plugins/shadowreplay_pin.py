"""A vLLM logits processor that `shadowreplay shadow up` loads into the shadow: it holds back
every stop token of a request until the request has `vllm_xargs.min_tokens` output tokens.

vLLM's Anthropic Messages API (0.32) has no `min_tokens` or `ignore_eos`, but it passes
`vllm_xargs` through to the sampling parameters; the replayer puts the recorded completion
tokens there (shadowreplay/llmapi.py), so a replayed message runs to its recorded length as chat
and completions requests do. This module is imported by vLLM's own Python (the shadow's
PYTHONPATH holds this folder), so it imports nothing of shadowreplay."""

from __future__ import annotations

from collections.abc import Sequence

from vllm import SamplingParams
from vllm.v1.sample.logits_processor.builtin import MinTokensLogitsProcessor


class PinnedLength(MinTokensLogitsProcessor):
    """vLLM's own min-tokens processor, reading the minimum from `extra_args["min_tokens"]`."""

    @staticmethod
    def add_request(params: SamplingParams, _: list[int] | None, output_tok_ids: list[int]) -> tuple[int, Sequence[int], set[int], bool] | None:
        extra = params.extra_args or {}
        try:
            n = int(extra.get("min_tokens") or 0)
        except (TypeError, ValueError):
            return None
        if n <= 0 or (params.min_tokens or 0) >= n or len(output_tok_ids) >= n:
            return None  # (a request's own min_tokens, where it has one, is vLLM's to enforce)
        return (n, output_tok_ids, params.all_stop_token_ids, params.structured_outputs is not None)
