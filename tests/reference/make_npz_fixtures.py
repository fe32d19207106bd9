#!/usr/bin/env python3
"""Writes tests/reference/fixtures/numpy_savez.npz and numpy_savez_compressed.npz with NumPy (np.savez stores
members, np.savez_compressed deflates them) for tests/core/test_npz.cpp, which checks the values below.
Run: /usr/bin/python3 tests/reference/make_npz_fixtures.py (needs python3-numpy)."""
import os

import numpy as np

here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")
arrays = {
    "arr_0": np.arange(24, dtype=np.uint8).reshape(2, 2, 2, 3),
    "mu": np.linspace(-1.0, 1.0, 5),
    "sigma": np.eye(3, dtype=np.float64) * 0.5,
    "labels": np.array([3, 1, 4], dtype=np.int64),
}
np.savez(os.path.join(here, "numpy_savez.npz"), **arrays)
np.savez_compressed(os.path.join(here, "numpy_savez_compressed.npz"), **arrays)
