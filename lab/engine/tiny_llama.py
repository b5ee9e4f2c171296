# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Make the lab's tiny Llama: a byte-level BPE tokenizer of 4096 tokens trained on the local text
files named on the command line, and a LlamaForCausalLM (hidden 256, 2 layers, 4 heads) with
random weights from a fixed seed, saved as safetensors with the tokenizer files and a chat
template. Deterministic for the same inputs and library versions.

Runs in a venv with torch, transformers and tokenizers (lab/labctl model makes one from the
wheelhouse). Prints one JSON line with what it made.

  python tiny_llama.py --out DIR FILE...
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import argparse
import gzip
import json
import os

SEED = 20240607
VOCAB_SIZE = 4096
HIDDEN = 256
INTERMEDIATE = 688
LAYERS = 2
HEADS = 4
MAX_POSITIONS = 2048
BOS, EOS, PAD = '<s>', '</s>', '<pad>'
ROLE_TOKENS = ['<|system|>', '<|user|>', '<|assistant|>']
# Each message: <|role|>, a newline, the text, </s>; the prompt for a reply ends with <|assistant|> and a newline.
CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{% for message in messages %}"
    "{{ '<|' + message['role'] + '|>\\n' }}"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for part in message['content'] %}{% if part['type'] == 'text' %}{{ part['text'] }}{% endif %}{% endfor %}"
    "{% endif %}"
    "{{ eos_token + '\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>\\n' }}{% endif %}"
)


def read_text(path):
    opener = gzip.open if path.endswith('.gz') else open
    with opener(path, 'rb') as handle:
        return handle.read().decode('utf-8', 'replace')


def paragraphs(paths):
    """The corpus as paragraphs, in the order of the files given (the caller sorts them)."""
    for path in paths:
        for block in read_text(path).split('\n\n'):
            block = block.strip()
            if block:
                yield block


def train_tokenizer(paths):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=VOCAB_SIZE, min_frequency=2, show_progress=False,
                                  special_tokens=[BOS, EOS, PAD] + ROLE_TOKENS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tokenizer.train_from_iterator(paragraphs(paths), trainer=trainer)
    bos_id = tokenizer.token_to_id(BOS)
    # Like Llama's tokenizer: <s> in front of every encoded text (chat prompts bring theirs in the template).
    tokenizer.post_processor = processors.TemplateProcessing(
        single='%s $A' % BOS, pair='%s $A %s $B' % (BOS, BOS), special_tokens=[(BOS, bos_id)])
    return tokenizer


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n', maxsplit=1)[0])
    parser.add_argument('--out', required=True)
    parser.add_argument('files', nargs='+')
    args = parser.parse_args()

    import torch
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    torch.manual_seed(SEED)
    torch.use_deterministic_algorithms(True)
    os.makedirs(args.out, exist_ok=True)

    raw = train_tokenizer(args.files)
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=raw, bos_token=BOS, eos_token=EOS, pad_token=PAD,
                                        model_max_length=MAX_POSITIONS, chat_template=CHAT_TEMPLATE,
                                        additional_special_tokens=ROLE_TOKENS)
    tokenizer.save_pretrained(args.out)

    config = LlamaConfig(vocab_size=raw.get_vocab_size(), hidden_size=HIDDEN, intermediate_size=INTERMEDIATE,
                         num_hidden_layers=LAYERS, num_attention_heads=HEADS, num_key_value_heads=HEADS,
                         max_position_embeddings=MAX_POSITIONS, rms_norm_eps=1e-5, tie_word_embeddings=False,
                         bos_token_id=raw.token_to_id(BOS), eos_token_id=raw.token_to_id(EOS),
                         pad_token_id=raw.token_to_id(PAD))
    model = LlamaForCausalLM(config).to(torch.float32).eval()
    model.save_pretrained(args.out, safe_serialization=True)

    sample = tokenizer.apply_chat_template([{'role': 'user', 'content': 'Hello'}], add_generation_prompt=True, tokenize=False)
    print(json.dumps({'name': 'tiny-llama', 'parameters': sum(p.numel() for p in model.parameters()),
                      'vocab_size': raw.get_vocab_size(), 'hidden_size': HIDDEN, 'layers': LAYERS, 'heads': HEADS,
                      'seed': SEED, 'dtype': 'float32', 'chat_prompt_example': sample,
                      'files': sorted(os.listdir(args.out))}, sort_keys=True))


if __name__ == '__main__':
    main()
