#!/usr/bin/env python3
"""An independent writer of llm.c token shards, from the documented layout alone (doc/formats.md,
karpathy/llm.c dev/data/data_common.py): 256 little-endian int32 (magic 20240520, version 1, the
token count, zeros), then the tokens as little-endian uint16. Used by tests/test_tokens.sh.

    write_shard.py OUT COUNT VOCAB [SEED]      COUNT tokens of a seeded pseudo-random text
    write_shard.py OUT COUNT --sparse BYTES    header only, file extended to BYTES (holes)
    write_shard.py OUT COUNT --header-only MAGIC VERSION   a header as given, no tokens
"""
import random
import struct
import sys


def header(magic, version, count):
    return struct.pack("<256i", magic, version, count, *([0] * 253))


def main():
    out, count = sys.argv[1], int(sys.argv[2])
    with open(out, "wb") as f:
        if sys.argv[3] == "--sparse":
            f.write(header(20240520, 1, count))
            f.truncate(int(sys.argv[4]))
        elif sys.argv[3] == "--header-only":
            f.write(header(int(sys.argv[4]), int(sys.argv[5]), count))
        else:
            vocab = int(sys.argv[3])
            rng = random.Random(int(sys.argv[4]) if len(sys.argv) > 4 else 1)
            # a text with structure to learn: words of 2..5 tokens from a small lexicon
            words = [[rng.randrange(1, vocab) for _ in range(rng.randrange(2, 6))] for _ in range(50)]
            toks = [0]
            while len(toks) < count:
                toks.extend(words[rng.randrange(len(words))])
            f.write(header(20240520, 1, count))
            f.write(struct.pack("<%dH" % count, *toks[:count]))


if __name__ == "__main__":
    main()
