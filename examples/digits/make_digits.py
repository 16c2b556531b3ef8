#!/usr/bin/python3
"""Writes scikit-learn's bundled digits (1797 8x8 images of the digits 0-9,
pixel values 0..16; Debian's python3-sklearn) as a pipedbn data set:

  DIR/digits.npz        Keras layout: x_train (1437, 8, 8) uint8, y_train
                        (1437,) uint8, x_test (360, 8, 8), y_test (360,)
  DIR/digits-train.csv  the same examples as CSV: a header p0..p63,label,
  DIR/digits-test.csv   one row per image

The first 1437 images train, the last 360 test (sklearn's order).

usage: python3 examples/digits/make_digits.py DIR
"""
import os
import sys

import numpy as np
from sklearn.datasets import load_digits

TRAIN = 1437


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    digits = load_digits()
    x = digits.images.astype(np.uint8)  # (1797, 8, 8), values 0..16
    y = digits.target.astype(np.uint8)
    assert x.shape == (1797, 8, 8) and x.max() == 16
    np.savez_compressed(os.path.join(out, "digits.npz"),
                        x_train=x[:TRAIN], y_train=y[:TRAIN],
                        x_test=x[TRAIN:], y_test=y[TRAIN:])
    header = ",".join(["p%d" % i for i in range(64)] + ["label"])
    for name, xs, ys in (("train", x[:TRAIN], y[:TRAIN]), ("test", x[TRAIN:], y[TRAIN:])):
        rows = np.concatenate([xs.reshape(len(xs), 64), ys[:, None]], axis=1)
        np.savetxt(os.path.join(out, "digits-%s.csv" % name), rows, fmt="%d",
                   delimiter=",", header=header, comments="")


if __name__ == "__main__":
    main()
