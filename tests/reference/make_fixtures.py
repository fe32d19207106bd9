#!/usr/bin/python3
"""Golden fixtures from PyTorch for tests/core/test_golden_torch.cpp.

Run with Debian's interpreter, which has python3-torch (1.13):

    /usr/bin/python3 tests/reference/make_fixtures.py

Writes one safetensors file per op family into tests/reference/fixtures/ (about 50 KB in all):
inputs, forward outputs and the gradients torch autograd gives for a fixed random upstream
gradient, in float64 and float32 (names "f64.*" / "f32.*"; the float32 inputs are the float64
ones rounded, and torch computes each dtype in that dtype).

Deterministic and re-runnable: every file draws from its own torch.manual_seed on the CPU with
one thread, keys are written sorted and nothing time- or host-dependent is stored, so a re-run
rewrites byte-identical files (each written to a temp file, then renamed). The safetensors format
is written by hand in fixture_io.py; the safetensors pip package is not needed.
"""

import os

import torch
import torch.nn.functional as F

from fixture_io import save_safetensors

FIXTURE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")
DTYPES = {"f64": torch.float64, "f32": torch.float32}


def leaf(t, dtype):
    return t.to(dtype).detach().requires_grad_(True)


def grads(out, upstream, *inputs):
    return torch.autograd.grad(out, inputs, upstream)


def softmax_fixtures():
    torch.manual_seed(1)
    x64, g64 = torch.randn(3, 4, 5, dtype=torch.float64) * 2, torch.randn(3, 4, 5, dtype=torch.float64)
    out = {}
    for p, dt in DTYPES.items():
        out[f"{p}.x"], out[f"{p}.grad_out"] = x64.to(dt), g64.to(dt)
        for dim in (1, 2):
            for name, fn in (("softmax", torch.softmax), ("log_softmax", torch.log_softmax)):
                x = leaf(x64, dt)
                y = fn(x, dim)
                (gx,) = grads(y, g64.to(dt), x)
                out[f"{p}.{name}.dim{dim}.out"], out[f"{p}.{name}.dim{dim}.grad_x"] = y, gx
    return out


def layer_norm_fixtures():
    torch.manual_seed(2)
    x64 = torch.randn(4, 3, 8, dtype=torch.float64) * 2 + 0.5
    w64, b64 = torch.randn(8, dtype=torch.float64), torch.randn(8, dtype=torch.float64)
    g64 = torch.randn(4, 3, 8, dtype=torch.float64)
    out = {}
    for p, dt in DTYPES.items():
        out[f"{p}.x"], out[f"{p}.weight"], out[f"{p}.bias"], out[f"{p}.grad_out"] = (
            x64.to(dt), w64.to(dt), b64.to(dt), g64.to(dt))
        x, w, b = leaf(x64, dt), leaf(w64, dt), leaf(b64, dt)
        y, mean, rstd = torch.native_layer_norm(x, [8], w, b, 1e-5)
        gx, gw, gb = grads(y, g64.to(dt), x, w, b)
        out.update({f"{p}.affine.out": y, f"{p}.affine.grad_x": gx, f"{p}.affine.grad_weight": gw,
                    f"{p}.affine.grad_bias": gb, f"{p}.mean": mean.reshape(-1), f"{p}.rstd": rstd.reshape(-1)})
        x = leaf(x64, dt)
        y = F.layer_norm(x, [8], eps=1e-5)
        (gx,) = grads(y, g64.to(dt), x)
        out[f"{p}.plain.out"], out[f"{p}.plain.grad_x"] = y, gx
    return out


def rms_norm(x, w, eps):
    y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    return y if w is None else y * w


def rms_norm_fixtures():
    torch.manual_seed(3)
    x64, w64 = torch.randn(4, 3, 8, dtype=torch.float64) * 2, torch.randn(8, dtype=torch.float64)
    g64 = torch.randn(4, 3, 8, dtype=torch.float64)
    out = {}
    for p, dt in DTYPES.items():
        out[f"{p}.x"], out[f"{p}.weight"], out[f"{p}.grad_out"] = x64.to(dt), w64.to(dt), g64.to(dt)
        out[f"{p}.rstd"] = torch.rsqrt(x64.to(dt).pow(2).mean(-1) + 1e-6).reshape(-1)
        x, w = leaf(x64, dt), leaf(w64, dt)
        y = rms_norm(x, w, 1e-6)
        gx, gw = grads(y, g64.to(dt), x, w)
        out[f"{p}.weighted.out"], out[f"{p}.weighted.grad_x"], out[f"{p}.weighted.grad_weight"] = y, gx, gw
        x = leaf(x64, dt)
        y = rms_norm(x, None, 1e-6)
        (gx,) = grads(y, g64.to(dt), x)
        out[f"{p}.plain.out"], out[f"{p}.plain.grad_x"] = y, gx
    return out


def cross_entropy_fixtures():
    torch.manual_seed(4)
    n, c = 7, 6
    logits64 = torch.randn(n, c, dtype=torch.float64) * 3
    target = torch.randint(0, c, (n,), dtype=torch.int64)
    target[1] = target[4] = -100
    out = {"target": target}
    for p, dt in DTYPES.items():
        out[f"{p}.logits"] = logits64.to(dt)
        for ls in (0.0, 0.1):
            for red in ("mean", "sum", "none"):
                key = f"{p}.ls{ls}.{red}"
                up = torch.randn(n if red == "none" else (), dtype=torch.float64).to(dt)
                x = leaf(logits64, dt)
                loss = F.cross_entropy(x, target, ignore_index=-100, reduction=red, label_smoothing=ls)
                (gx,) = grads(loss, up, x)
                out[f"{key}.loss"], out[f"{key}.grad_loss"], out[f"{key}.grad_logits"] = loss, up, gx
    return out


def gelu_fixtures():
    torch.manual_seed(5)
    x64, g64 = torch.randn(64, dtype=torch.float64) * 3, torch.randn(64, dtype=torch.float64)
    out = {}
    for p, dt in DTYPES.items():
        out[f"{p}.x"], out[f"{p}.grad_out"] = x64.to(dt), g64.to(dt)
        for approx in ("none", "tanh"):
            x = leaf(x64, dt)
            y = F.gelu(x, approximate=approx)
            (gx,) = grads(y, g64.to(dt), x)
            out[f"{p}.{approx}.out"], out[f"{p}.{approx}.grad_x"] = y, gx
    return out


def matmul_fixtures():
    torch.manual_seed(6)
    # mm1: a [3, 4, 5] @ b [5, 6], b stored transposed as bt [6, 5] (a 2-D b broadcasts over the batch).
    # mm2: a [2, 1, 4, 5] (stored transposed as at [2, 1, 5, 4]) @ b [3, 5, 6] -> [2, 3, 4, 6].
    a1, bt1, g1 = (torch.randn(*s, dtype=torch.float64) for s in ((3, 4, 5), (6, 5), (3, 4, 6)))
    at2, b2, g2 = (torch.randn(*s, dtype=torch.float64) for s in ((2, 1, 5, 4), (3, 5, 6), (2, 3, 4, 6)))
    out = {}
    for p, dt in DTYPES.items():
        a, bt = leaf(a1, dt), leaf(bt1, dt)
        y = a @ bt.t()
        ga, gbt = grads(y, g1.to(dt), a, bt)
        out.update({f"{p}.mm1.a": a, f"{p}.mm1.bt": bt, f"{p}.mm1.grad_out": g1.to(dt), f"{p}.mm1.out": y,
                    f"{p}.mm1.grad_a": ga, f"{p}.mm1.grad_b": gbt.t()})
        at, b = leaf(at2, dt), leaf(b2, dt)
        y = at.transpose(-1, -2) @ b
        gat, gb = grads(y, g2.to(dt), at, b)
        out.update({f"{p}.mm2.at": at, f"{p}.mm2.b": b, f"{p}.mm2.grad_out": g2.to(dt), f"{p}.mm2.out": y,
                    f"{p}.mm2.grad_a": gat.transpose(-1, -2), f"{p}.mm2.grad_b": gb})
    return out


def main():
    torch.set_num_threads(1)
    os.makedirs(FIXTURE_DIR, exist_ok=True)
    meta = {"generator": "tests/reference/make_fixtures.py", "torch": torch.__version__.split("+")[0]}
    for name, fn in (("softmax", softmax_fixtures), ("layer_norm", layer_norm_fixtures),
                     ("rms_norm", rms_norm_fixtures), ("cross_entropy", cross_entropy_fixtures),
                     ("gelu", gelu_fixtures), ("matmul", matmul_fixtures)):
        path = os.path.join(FIXTURE_DIR, name + ".safetensors")
        save_safetensors(path, fn(), meta)
        print(f"wrote {path} ({os.path.getsize(path)} bytes)")


if __name__ == "__main__":
    main()
