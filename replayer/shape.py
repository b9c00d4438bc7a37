"""Prompts for shape rows (recorded with `record --keep shape`: no body, `hash_ids` over character
blocks of `hash_block_chars`, `prompt_tokens`): synthetic text of the recorded token count whose
blocks are a function of the hash ids alone, so requests that shared a prefix share it again.

Every block id stands for `block_tokens` tokens, one number for the whole selection (its
`block_chars` times the selection's content tokens per prompt character), so an id gives the same
text in every row; a row's last block takes what is left of its token count. The text of a block
is traces.textsynth's (the trace importers' synthesis), under the shadow's tokenizer.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa

from shadowreplay import llmapi
from shadowreplay.errors import ConfigError
from shadowreplay.traces.textsynth import Synthesizer, row_blocks
from shadowreplay.traces.tokenizer import Tokenizer

HASH_KEY = "shape"  # block keys: block_key("shape", "block", id)


@dataclass(frozen=True)
class ShapePrompts:
    """What shape rows need to become prompts: the tokenizer and the selection's block size."""

    tokenizer: Tokenizer
    block_tokens: int


def is_shape_row(body: str | None, hash_ids: Sequence[int] | None, block_chars: int | None) -> bool:
    return body is None and bool(hash_ids) and bool(block_chars)


def shape_mask(table: pa.Table) -> list[bool]:
    """Per row: is it a shape row (before fill_bodies)."""
    if "hash_block_chars" not in table.column_names:
        return [False] * table.num_rows
    return [is_shape_row(b, h, c) for b, h, c in zip(table.column("request_body").to_pylist(),
                                                     table.column("hash_ids").to_pylist(),
                                                     table.column("hash_block_chars").to_pylist())]


def _content_tokens(prompt_tokens: int | None, n_special: int) -> int | None:
    return None if prompt_tokens is None else max(0, int(prompt_tokens) - n_special)


def block_tokens(table: pa.Table, tok: Tokenizer) -> int | None:
    """Tokens per hash id for the shape rows of a selection (None: it has none): the rows' block
    characters times their content tokens per prompt character, at least 1."""
    if "hash_block_chars" not in table.column_names:
        return None
    cols = {k: table.column(k).to_pylist() for k in ("request_body", "hash_ids", "hash_block_chars", "prompt_tokens", "prompt_chars")}
    toks = chars = 0
    block = None
    for body, hids, bc, pt, pc in zip(*cols.values()):
        if not is_shape_row(body, hids, bc):
            continue
        block = block or int(bc)
        ct = _content_tokens(pt, tok.n_special)
        if ct is not None and pc:
            toks += ct
            chars += int(pc)
    if block is None:
        return None
    return max(1, round(block * toks / chars)) if chars else block


def open_prompts(table: pa.Table, tok: Tokenizer | None) -> ShapePrompts | None:
    """The ShapePrompts for a selection, None when it has no shape rows; a selection with shape
    rows and no tokenizer is an error (the prompts' token counts depend on the shadow's tokenizer)."""
    if tok is None:
        if any(shape_mask(table)):
            raise ConfigError("the recording has shape rows (record --keep shape, no text): pass --tokenizer DIR "
                              "(the shadow model's tokenizer.json folder) to synthesize their prompts")
        return None
    n = block_tokens(table, tok)
    return None if n is None else ShapePrompts(tok, n)


def fill_bodies(table: pa.Table, bodies: list[str | None], sp: ShapePrompts | None) -> list[str | None]:
    """bodies with every shape row's None replaced by a synthesized request body (JSON text of its
    API: chat gets one user message, completions a prompt string); other rows unchanged."""
    if sp is None:
        return bodies
    col = {k: table.column(k).to_pylist() for k in ("request_id", "hash_ids", "hash_block_chars", "prompt_tokens", "kind", "model", "stream")}
    idx, blocks, targets = [], [], []
    special = sp.tokenizer.n_special
    chat_extra: int | None = None  # template tokens around one user message, beyond the specials
    for i, body in enumerate(bodies):
        if not is_shape_row(body, col["hash_ids"][i], col["hash_block_chars"][i]) or col["prompt_tokens"][i] is None:
            continue
        if col["kind"][i] not in (llmapi.CHAT.kind, llmapi.COMPLETION.kind):
            continue  # other APIs' shape rows are not synthesized (sent without a body)
        content = _content_tokens(col["prompt_tokens"][i], special) or 0
        if col["kind"][i] == llmapi.CHAT.kind and hasattr(sp.tokenizer, "chat_overhead"):
            if chat_extra is None:
                chat_extra = max(0, sp.tokenizer.chat_overhead() - special)
            content = max(0, content - chat_extra)
        idx.append(i)
        blocks.append(row_blocks(("shape", col["request_id"][i]), content, sp.block_tokens, col["hash_ids"][i], HASH_KEY))
        targets.append(content + special)
    if not idx:
        return bodies
    texts = Synthesizer(sp.tokenizer).prompts(blocks, targets)
    out = list(bodies)
    for i, text in zip(idx, texts):
        api = llmapi.api_for_kind(col["kind"][i])
        obj: dict = {}
        if col["model"][i]:
            obj["model"] = col["model"][i]
        if api is llmapi.CHAT:
            obj["messages"] = [{"role": "user", "content": text}]
        else:
            obj["prompt"] = text
        obj["stream"] = bool(col["stream"][i])
        out[i] = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    return out


def shape_prompts(table: pa.Table, tokenizer: str | None) -> ShapePrompts | None:
    """open_prompts with --tokenizer DIR_OR_URL opened (traces.tokenizer.open_tokenizer) only when
    the selection has shape rows."""
    if tokenizer is None or "hash_block_chars" not in table.column_names:
        return open_prompts(table, None)
    if not any(v is not None for v in table.column("hash_block_chars").to_pylist()):
        return None
    from shadowreplay.traces.tokenizer import open_tokenizer

    return open_prompts(table, open_tokenizer(tokenizer))
