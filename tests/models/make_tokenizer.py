"""Writes a tiny tokenizer into a model folder, made locally with the ``tokenizers`` library
(byte-level BPE trained on a few sentences, padded with added tokens up to the model's
``vocab_size``): ``tokenizer.json`` and ``tokenizer_config.json`` (with a ChatML chat template), so
a real SGLang server can load the folder with ``--load-format dummy`` and no hub access.

Usage: ``PYTHON make_tokenizer.py MODEL_DIR`` with a python that has ``tokenizers`` (the SGLang
server test venv). Deterministic: the same input gives the same files. Special tokens get ids
0-2 (``<|endoftext|>``, ``<|im_start|>``, ``<|im_end|>``), matching the configs' bos/eos ids.
"""

import json
import sys
from pathlib import Path

from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers

SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
TEXT = [
    "The quick brown fox jumps over the lazy dog.",
    "Hello world, this is a tiny tokenizer for SGLang tests.",
    "What is the capital of France? Paris is the capital of France.",
    "Once upon a time there was a small model.",
] * 50
CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def main(folder: Path) -> None:
    vocab_size = json.loads((folder / "config.json").read_text())["vocab_size"]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=min(1000, vocab_size), special_tokens=SPECIALS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(TEXT, trainer)
    pad = vocab_size - tok.get_vocab_size()
    if pad > 0:
        tok.add_tokens([AddedToken(f" w{i}", normalized=False) for i in range(pad)])
    tok.save(str(folder / "tokenizer.json"))
    cfg = {"tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": 4096,
           "bos_token": None, "eos_token": "<|im_end|>", "pad_token": "<|endoftext|>", "unk_token": None,
           "chat_template": CHAT_TEMPLATE}
    (folder / "tokenizer_config.json").write_text(json.dumps(cfg, indent=1))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
