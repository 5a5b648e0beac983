#!/usr/bin/env python3
"""Make the reference token ids that tests/test_tokenize.sh compares surge-tokenize against.

Run once, by hand, where PyPI is reachable (the library is never needed by make check):
    pip install tokenizers
    tools/tok-reference.py tests/data/tok
It trains a small byte-level BPE vocabulary with the Hugging Face `tokenizers` library (GPT-2's
byte-to-symbol map and pre-tokenization regex, the <|endoftext|> special token) on the texts of
the directory (*.txt), saves it as hf/vocab.json + hf/merges.txt, then loads those files back as a
user's GPT-2 files would be loaded and writes the ids of every text to NAME.hf.ids (one line,
space-separated). With --surge-dir DIR it also encodes the texts with the vocab.json + merges.txt
that `surge-tokenize train` wrote in DIR, into NAME.surge.ids: Surge's vocabulary used by the
reference tool. tests/data/tok/surge was made by
    surge-tokenize train --out tests/data/tok/surge --vocab-size 600 --min-frequency 1 tests/data/tok/*.txt
    tools/tok-reference.py tests/data/tok --surge-dir tests/data/tok/surge
"""
import argparse
import glob
import os

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

VOCAB = 600


def byte_level(vocab, merges):
    tok = Tokenizer(models.BPE.from_file(vocab, merges))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    return tok


def read(path):
    with open(path, "rb") as f:
        return f.read().decode("utf-8")


def write_ids(tok, text, out):
    ids = tok.encode(text).ids
    assert tok.decode(ids) == text, out
    with open(out, "w") as f:
        f.write(" ".join(map(str, ids)) + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--surge-dir")
    a = ap.parse_args()
    texts = sorted(glob.glob(os.path.join(a.dir, "*.txt")))
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(vocab_size=VOCAB, special_tokens=["<|endoftext|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train(texts, trainer)
    out = os.path.join(a.dir, "hf")
    os.makedirs(out, exist_ok=True)
    tok.model.save(out)
    hf = byte_level(os.path.join(out, "vocab.json"), os.path.join(out, "merges.txt"))
    surge = None
    if a.surge_dir:
        surge = byte_level(os.path.join(a.surge_dir, "vocab.json"), os.path.join(a.surge_dir, "merges.txt"))
    for t in texts:
        stem = t[: -len(".txt")]
        write_ids(hf, read(t), stem + ".hf.ids")
        if surge:
            write_ids(surge, read(t), stem + ".surge.ids")


if __name__ == "__main__":
    main()
