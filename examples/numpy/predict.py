#!/usr/bin/python3
"""Uses a finished pipedbn run with NumPy alone: what `master predict` and
`master transform` compute, from the run's weights.npz (and scale.npz).

  python3 examples/numpy/predict.py RUN X [--array NAME] [--labels | --layer N] [--out FILE.npy]

RUN is the run's output folder (runs/<name>); X is a .npy file or an .npz
archive (--array NAME, default x_test), one example per row (an image of
d1 x d2 values is flattened). Without --layer it prints or writes the class
probabilities of the fine-tuned network (rows x classes, float32), with
--labels the most probable class of each row; with --layer N the pre-trained
DBN's hidden activations at layer N (1 = RBM_1's; 0 = the top).

The forward pass, as pipedbn computes it (docs/data.md):

  x = (x - offset) * factor                    scale.npz, when data.scale is unit or standardize
  x = (x - input_mean) * input_scale           weights.npz, when dbn.visible is gaussian
  h = sigmoid(x @ W1 + b1), then W2, b2, ...   the pre-trained DBN (master transform)
  h = sigmoid(x @ ft_W1 + ft_b1), ...          the fine-tuned hidden layers
  p = softmax(h @ ft_Wout + ft_bout)           the classifier (master predict)
"""
import argparse
import os
import sys

import numpy as np


def load_examples(path, array):
    if path.endswith(".npz"):
        x = np.load(path)[array or "x_test"]
    else:
        x = np.load(path)
    return x.reshape(len(x), -1).astype(np.float32)


def prepare(run, w, x):
    """Scales x as the run scaled its training data."""
    scale = os.path.join(run, "scale.npz")
    if os.path.exists(scale):
        s = np.load(scale)
        x = (x - s["offset"]) * s["factor"]
    if "input_mean" in w:
        x = (x - w["input_mean"]) * w["input_scale"]
    return x


def sigmoid(z):
    return 1 / (1 + np.exp(-z))


def layers(w, prefix):
    """The hidden layers' weights and biases, layer 1 first."""
    out, i = [], 1
    while prefix + "W" + str(i) in w:
        out.append((w[prefix + "W" + str(i)], w[prefix + "b" + str(i)]))
        i += 1
    return out


def transform(w, x, layer):
    hidden = layers(w, "")
    for W, b in hidden[: layer or len(hidden)]:
        x = sigmoid(x @ W + b)
    return x


def probabilities(w, x):
    if "ft_Wout" not in w:
        sys.exit("the run has no fine-tuned network (finetune.epochs: 0): use --layer")
    for W, b in layers(w, "ft_"):
        x = sigmoid(x @ W + b)
    z = x @ w["ft_Wout"] + w["ft_bout"]
    p = np.exp(z - z.max(axis=1, keepdims=True))
    return p / p.sum(axis=1, keepdims=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run")
    ap.add_argument("x")
    ap.add_argument("--array")
    ap.add_argument("--labels", action="store_true")
    ap.add_argument("--layer", type=int)
    ap.add_argument("--out")
    a = ap.parse_args()
    w = dict(np.load(os.path.join(a.run, "weights.npz")))
    x = prepare(a.run, w, load_examples(a.x, a.array))
    if a.layer is not None:
        y = transform(w, x, a.layer)
    else:
        y = probabilities(w, x)
        if a.labels:
            y = y.argmax(axis=1).astype(np.int64)
    if a.out:
        np.save(a.out, y)
    else:
        try:
            np.savetxt(sys.stdout, y, fmt="%d" if a.labels else "%.6g")
        except BrokenPipeError:  # | head
            sys.stderr.close()


if __name__ == "__main__":
    main()
