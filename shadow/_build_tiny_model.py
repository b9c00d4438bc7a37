"""Builds the tiny random-weight Llama model. Runs in the vLLM venv (torch, transformers,
tokenizers), started by shadow.tiny_model.build_tiny_model; not imported by the main package.

Usage: python _build_tiny_model.py STAGING_DIR   (STAGING_DIR/corpus.txt holds the training text)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

VOCAB = 4096
SPECIALS = ["<unk>", "<s>", "</s>", "<pad>", "<|system|>", "<|user|>", "<|assistant|>"]
CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{% for m in messages %}"
    "{{ '<|' + m['role'] + '|>\\n' }}"
    "{% if m['content'] is string %}{{ m['content'] }}"
    "{% else %}{% for p in m['content'] %}{% if p['type'] == 'text' %}{{ p['text'] }}{% endif %}{% endfor %}"
    "{% endif %}"
    "{{ eos_token + '\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>\\n' }}{% endif %}"
)


def train_tokenizer(corpus: Path):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB,
        special_tokens=SPECIALS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train([str(corpus)], trainer)
    return tok


def main(staging: Path) -> None:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    torch.manual_seed(0)
    tok = train_tokenizer(staging / "corpus.txt")
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<s>",
        eos_token="</s>",
        unk_token="<unk>",
        pad_token="<pad>",
        additional_special_tokens=SPECIALS[4:],
        model_max_length=8192,
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(staging)
    config = LlamaConfig(
        vocab_size=VOCAB,
        hidden_size=256,
        intermediate_size=688,
        num_hidden_layers=4,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=8192,
        bos_token_id=fast.bos_token_id,
        eos_token_id=fast.eos_token_id,
        pad_token_id=fast.pad_token_id,
        tie_word_embeddings=False,
        torch_dtype="bfloat16",
    )
    model = LlamaForCausalLM(config).to(torch.bfloat16)
    model.save_pretrained(staging, safe_serialization=True)
    # transformers writes the template into tokenizer_config.json or chat_template.jinja depending
    # on its version; vLLM reads either. Keep a copy in the config too for older readers.
    tc = staging / "tokenizer_config.json"
    cfg = json.loads(tc.read_text())
    cfg.setdefault("chat_template", CHAT_TEMPLATE)
    tc.write_text(json.dumps(cfg, indent=2))
    (staging / "corpus.txt").unlink(missing_ok=True)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
