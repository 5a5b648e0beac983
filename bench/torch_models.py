#!/usr/bin/python3
"""The zoo's mlp, vgg-mini and gpt in PyTorch, for make bench BENCH=torch (bench/bench_torch.sh).

    torch_models.py MODEL THREADS SECONDS    prints the milliseconds of one training step

The same layers, shapes, batch, loss and optimizer as bench/bench_models.c's decks (src/nn/zoo.c):
  mlp       784-512-512-10, ReLU, batch 128, SGD lr 0.05 momentum 0.9
  vgg-mini  conv3x3 32, 32, maxpool 2, conv3x3 64, 64, maxpool 2, fc 256, fc 10 (ReLU after every
            conv and fc1), batch 128, SGD lr 0.005 momentum 0.9
  gpt       4 pre-LN blocks of width 256, 4 heads, context 128, vocabulary 256, learned positions,
            GELU (tanh), tied embedding, batch 16, AdamW lr 3e-4 betas (0.9, 0.95) eps 1e-8,
            weight decay 0 (the deck's default)
Inputs are random tensors made once (Surge's synthetic data costs it a few microseconds a step).
A step is zero_grad, forward, loss, backward and the optimizer step; after 3 warm-up steps, steps
run until SECONDS of wall time have passed (at least 5) and the mean is printed.
"""
import math
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(width, eps=1e-5)
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.ln2 = nn.LayerNorm(width, eps=1e-5)
        self.fc = nn.Linear(width, 4 * width)
        self.fcproj = nn.Linear(4 * width, width)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(C // self.heads))
        mask = torch.ones(T, T, dtype=torch.bool).tril()
        att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, C)
        x = x + self.proj(y)
        return x + self.fcproj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, vocab=256, context=128, width=256, layers=4, heads=4):
        super().__init__()
        self.wte = nn.Embedding(vocab, width)
        self.wpe = nn.Embedding(context, width)
        self.blocks = nn.ModuleList(Block(width, heads) for _ in range(layers))
        self.lnf = nn.LayerNorm(width, eps=1e-5)
        for p in self.parameters():
            if p.dim() > 1:
                nn.init.normal_(p, 0.0, 0.02)

    def forward(self, idx):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1]))
        for b in self.blocks:
            x = b(x)
        return self.lnf(x) @ self.wte.weight.t()  # tied lm_head


def vgg_mini():
    return nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.Conv2d(32, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.Conv2d(64, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(64 * 7 * 7, 256), nn.ReLU(), nn.Linear(256, 10))


def mlp():
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                         nn.Linear(512, 10))


def setup(name):
    """model, optimizer, inputs, targets and the loss of one step."""
    torch.manual_seed(1)
    if name == "gpt":
        model = GPT()
        opt = torch.optim.AdamW(model.parameters(), lr=3e-4, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.0)
        x = torch.randint(0, 256, (16, 128))
        y = torch.randint(0, 256, (16, 128))
        return model, opt, x, y, lambda out: F.cross_entropy(out.view(-1, 256), y.view(-1))
    model, lr = (mlp(), 0.05) if name == "mlp" else (vgg_mini(), 0.005)
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    x = torch.rand(128, 1, 28, 28)
    y = torch.randint(0, 10, (128,))
    return model, opt, x, y, lambda out: F.cross_entropy(out, y)


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in ("mlp", "vgg-mini", "gpt"):
        sys.exit("usage: torch_models.py mlp|vgg-mini|gpt THREADS SECONDS")
    torch.set_num_threads(int(sys.argv[2]))
    seconds = float(sys.argv[3])
    model, opt, x, y, loss_of = setup(sys.argv[1])

    def step():
        opt.zero_grad(set_to_none=True)
        loss_of(model(x)).backward()
        opt.step()

    for _ in range(3):
        step()
    steps, t0 = 0, time.perf_counter()
    while steps < 5 or time.perf_counter() - t0 < seconds:
        step()
        steps += 1
    print("%.3f" % (1e3 * (time.perf_counter() - t0) / steps))


if __name__ == "__main__":
    main()
