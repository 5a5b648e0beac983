#!/usr/bin/python3
"""Make tests/data/reference/bn_tiny.h5: PyTorch float64 reference vectors of a tiny ResNet with
batch norm (Surge's resnet-mini with norm = batchnorm, resnet_width 4, resnet_blocks 1,
resnet_stages 2), which tests/test_reference checks Surge against.

Run once, by hand, with Debian's packages (never needed by make check):
    apt-get install -y python3-torch python3-h5py
    /usr/bin/python3 tools/bn-reference.py tests/data/reference/bn_tiny.h5
It trains two SGD steps (lr 0.05, momentum 0.9, Nesterov, weight decay 5e-4) in training mode on
the first 8 Fashion-MNIST training images and writes, beside the README's usual groups
(/params, /grads, /step1, /step2, /forward/...), the buffers: /buffers (initial running mean and
variance), /running1 and /running2 (after the first and second forward pass: momentum 0.1,
unbiased variance, as torch.nn.BatchNorm2d), and /forward/eval_logits (evaluation mode after step 2,
normalised by the running estimates). The batch norms' weight and bias start at random values
(U(0.5, 1.5), U(-0.2, 0.2)) instead of 1 and 0, so the affine part is exercised too.
"""
import gzip
import struct
import sys

import h5py
import numpy as np
import torch
import torch.nn.functional as F

DATA = "/usr/share/datasets/fashion-mnist"
B, WIDTH = 8, 4


def idx(path):
    with gzip.open(path, "rb") as f:
        magic, = struct.unpack(">I", f.read(4))
        dims = struct.unpack(">" + "I" * (magic & 0xFF), f.read(4 * (magic & 0xFF)))
        return np.frombuffer(f.read(), dtype=np.uint8).reshape(dims)


def conv(name, cin, cout, k, params):
    w = torch.empty(cout, cin, k, k, dtype=torch.float64)
    torch.nn.init.kaiming_uniform_(w, a=5 ** 0.5)  # PyTorch's Conv2d default
    params[name + ".weight"] = w


def bn(name, c, params, buffers):
    params[name + ".weight"] = torch.empty(c, dtype=torch.float64).uniform_(0.5, 1.5)
    params[name + ".bias"] = torch.empty(c, dtype=torch.float64).uniform_(-0.2, 0.2)
    buffers[name + ".running_mean"] = torch.zeros(c, dtype=torch.float64)
    buffers[name + ".running_var"] = torch.ones(c, dtype=torch.float64)


def build():
    p, b = {}, {}
    conv("stem", 1, WIDTH, 3, p); bn("stem_bn", WIDTH, p, b)
    s1 = "stage1.block1"
    conv(s1 + ".conv_a", WIDTH, WIDTH, 3, p); bn(s1 + ".conv_a_bn", WIDTH, p, b)
    conv(s1 + ".conv_b", WIDTH, WIDTH, 3, p); bn(s1 + ".conv_b_bn", WIDTH, p, b)
    s2, W2 = "stage2.block1", 2 * WIDTH
    conv(s2 + ".down", WIDTH, W2, 1, p); bn(s2 + ".down_bn", W2, p, b)
    conv(s2 + ".conv_a", WIDTH, W2, 3, p); bn(s2 + ".conv_a_bn", W2, p, b)
    conv(s2 + ".conv_b", W2, W2, 3, p); bn(s2 + ".conv_b_bn", W2, p, b)
    fc = torch.nn.Linear(W2, 10).double()
    p["fc.weight"], p["fc.bias"] = fc.weight.detach().clone(), fc.bias.detach().clone()
    for t in p.values():
        t.requires_grad_(True)
    return p, b


def forward(p, b, x, train):
    def cb(h, name, stride, pad):  # conv without bias, then batch norm
        h = F.conv2d(h, p[name + ".weight"], None, stride, pad)
        n = name + "_bn"
        return F.batch_norm(h, b[n + ".running_mean"], b[n + ".running_var"], p[n + ".weight"], p[n + ".bias"],
                            training=train, momentum=0.1, eps=1e-5)
    h = F.relu(cb(x, "stem", 1, 1))
    r = F.relu(cb(h, "stage1.block1.conv_a", 1, 1))
    h = F.relu(h + cb(r, "stage1.block1.conv_b", 1, 1))
    s = cb(h, "stage2.block1.down", 2, 0)
    r = F.relu(cb(h, "stage2.block1.conv_a", 2, 1))
    h = F.relu(s + cb(r, "stage2.block1.conv_b", 1, 1))
    return F.linear(h.mean(dim=(2, 3)), p["fc.weight"], p["fc.bias"])


def main(out):
    torch.manual_seed(33)
    x = torch.tensor(idx(DATA + "/train-images-idx3-ubyte.gz")[:B], dtype=torch.float64).unsqueeze(1) / 255.0
    y = torch.tensor(idx(DATA + "/train-labels-idx1-ubyte.gz")[:B], dtype=torch.long)
    p, b = build()
    names = sorted(p)
    opt = torch.optim.SGD([p[n] for n in names], lr=0.05, momentum=0.9, nesterov=True, weight_decay=5e-4)
    with h5py.File(out, "w") as f:
        cfg = f.create_group("config")
        for k, v in {"model": "resnet-mini norm=batchnorm width 4 blocks 1 stages 2", "optimizer": "SGD",
                     "lr": 0.05, "momentum": 0.9, "nesterov": 1, "weight_decay": 5e-4, "bn_momentum": 0.1,
                     "bn_eps": 1e-5, "seed": 33}.items():
            cfg.attrs[k] = v
        f["inputs/x"], f["inputs/y"] = x.numpy(), y.numpy().astype(np.int64)
        for n in names:
            f["params/" + n] = p[n].detach().numpy()
        for n in b:
            f["buffers/" + n] = b[n].numpy()
        for step in (1, 2):
            opt.zero_grad()
            logits = forward(p, b, x, True)
            loss = F.cross_entropy(logits, y)
            loss.backward()
            for n in b:
                f["running%d/%s" % (step, n)] = b[n].numpy()
            if step == 1:
                f["forward/logits"], f["forward/loss"] = logits.detach().numpy(), loss.item()
                for n in names:
                    f["grads/" + n] = p[n].grad.numpy()
            else:
                f["forward/loss_after_step1"] = loss.item()
            opt.step()
            for n in names:
                f["step%d/%s" % (step, n)] = p[n].detach().numpy()
        with torch.no_grad():
            f["forward/eval_logits"] = forward(p, b, x, False).numpy()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tests/data/reference/bn_tiny.h5")
