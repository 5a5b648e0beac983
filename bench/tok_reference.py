#!/usr/bin/env python3
"""The Hugging Face side of bench/bench_tokens.sh: train a byte-level BPE of VOCAB tokens on the
files under TEXT, then encode every file with it, on the threads RAYON_NUM_THREADS allows; prints
"hf-train MB/s" and "hf-encode MB/s" (bytes read over wall time, reading included)."""
import os
import sys
import time

from tokenizers import Tokenizer, models, pre_tokenizers, trainers


def main():
    text, vocab = sys.argv[1], int(sys.argv[2])
    files = sorted(os.path.join(d, f) for d, _, fs in os.walk(text) for f in fs if not f.startswith("."))
    total = sum(os.path.getsize(f) for f in files)
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(vocab_size=vocab, min_frequency=2, special_tokens=["<|endoftext|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    t0 = time.time()
    tok.train(files, trainer)
    t1 = time.time()
    docs = [open(f, "rb").read().decode("utf-8", "replace") for f in files]
    n = sum(len(e.ids) for e in tok.encode_batch(docs))
    t2 = time.time()
    print("hf-train %.2f" % (total / 1e6 / (t1 - t0)))
    print("hf-encode %.2f %d" % (total / 1e6 / (t2 - t1), n))


if __name__ == "__main__":
    main()
