#!/usr/bin/python3
"""Golden fixtures from PyTorch for the image ops (tests/core/test_golden_image_ops.cpp).

Run with Debian's interpreter, which has python3-torch (1.13):

    /usr/bin/python3 tests/reference/make_image_op_fixtures.py

Writes one safetensors file per op family into tests/reference/fixtures/: upsample_nearest2d
(nn.Upsample(scale_factor=s, mode="nearest"), s = 2 and 3) and avg_pool2d
(F.avg_pool2d(x, kernel, stride), kernel/stride 2/2 and 3/2, no padding, floor mode), conv2d
(F.conv2d: 3x3 padded, strided, dilated with groups, pointwise) and group_norm (F.group_norm with
and without affine parameters). For each
dtype ("f64.*" / "f32.*", the float32 inputs being the float64 ones rounded, torch computing each
dtype in that dtype): the input "x", and per case ("<p>.<case>.*") a fixed random upstream
gradient "grad_out", the output "out" and the gradient torch autograd gives for it, "grad_x"; the
ops with parameters also store them per case ("<p>.<case>.weight", ".bias") and their gradients
(".grad_weight", ".grad_bias").

A new op family is one function returning its tensors, added to FAMILIES. Deterministic and
re-runnable: each family draws from its own torch.manual_seed on one thread and fixture_io writes
sorted keys, so a re-run rewrites byte-identical files.
"""

import os

import torch
import torch.nn as nn
import torch.nn.functional as F

from fixture_io import save_safetensors

FIXTURE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")
DTYPES = {"f64": torch.float64, "f32": torch.float32}


def single_input_cases(seed, shape, cases):
    """x of `shape` and, per case name -> fn, fn(x), a random grad_out and torch's grad_x."""
    torch.manual_seed(seed)
    x64 = torch.randn(*shape, dtype=torch.float64)
    upstream, out = {}, {}
    for p, dt in DTYPES.items():
        out[f"{p}.x"] = x64.to(dt)
        for name, fn in cases.items():
            x = x64.to(dt).detach().requires_grad_(True)
            y = fn(x)
            if name not in upstream:
                upstream[name] = torch.randn(*y.shape, dtype=torch.float64)
            g = upstream[name].to(dt)
            (gx,) = torch.autograd.grad(y, (x,), g)
            out.update({f"{p}.{name}.out": y, f"{p}.{name}.grad_out": g, f"{p}.{name}.grad_x": gx})
    return out


def upsample_nearest2d_fixtures():
    cases = {f"scale{s}": nn.Upsample(scale_factor=s, mode="nearest") for s in (2, 3)}
    return single_input_cases(1, (2, 2, 3, 5), cases)


def avg_pool2d_fixtures():
    def pool(k, s):
        return lambda x: F.avg_pool2d(x, k, s)

    return single_input_cases(2, (2, 3, 7, 8), {f"k{k}s{s}": pool(k, s) for k, s in ((2, 2), (3, 2))})


def parameter_cases(seed, shape, cases):
    """x of `shape` and, per case name -> (weight shape, bias shape or None, fn(x, w, b)), random
    parameters, fn's output, a random grad_out and torch's gradients of x, the weight and the bias."""
    torch.manual_seed(seed)
    x64 = torch.randn(*shape, dtype=torch.float64)
    params = {name: (torch.randn(*w, dtype=torch.float64) * 0.5, None if b is None else torch.randn(*b, dtype=torch.float64))
              for name, (w, b, _) in cases.items()}
    upstream, out = {}, {}
    for p, dt in DTYPES.items():
        out[f"{p}.x"] = x64.to(dt)
        for name, (_, _, fn) in cases.items():
            w64, b64 = params[name]
            leaves = [x64.to(dt).detach().requires_grad_(True), w64.to(dt).detach().requires_grad_(True)]
            if b64 is not None:
                leaves.append(b64.to(dt).detach().requires_grad_(True))
            y = fn(leaves[0], leaves[1], leaves[2] if b64 is not None else None)
            if name not in upstream:
                upstream[name] = torch.randn(*y.shape, dtype=torch.float64)
            g = upstream[name].to(dt)
            grads = torch.autograd.grad(y, leaves, g)
            c = f"{p}.{name}"
            out.update({f"{c}.weight": leaves[1].detach(), f"{c}.out": y.detach(), f"{c}.grad_out": g,
                        f"{c}.grad_x": grads[0], f"{c}.grad_weight": grads[1]})
            if b64 is not None:
                out.update({f"{c}.bias": leaves[2].detach(), f"{c}.grad_bias": grads[2]})
    return out


def conv2d_fixtures():
    def conv(**kw):
        return lambda x, w, b: F.conv2d(x, w, b, **kw)

    return parameter_cases(3, (2, 4, 7, 6), {
        "same3x3": ((5, 4, 3, 3), (5,), conv(padding=1)),
        "stride2": ((3, 4, 3, 3), (3,), conv(stride=2, padding=1)),
        "dilated_groups": ((6, 2, 3, 2), (6,), conv(padding=(2, 1), dilation=2, groups=2)),
        "pointwise": ((3, 4, 1, 1), None, conv()),
    })


def group_norm_fixtures():
    def norm(groups):
        return lambda x, w, b: F.group_norm(x, groups, w, b, eps=1e-5)

    return parameter_cases(4, (2, 6, 4, 3), {"g2": ((6,), (6,), norm(2)), "g3": ((6,), (6,), norm(3))})


FAMILIES = (("upsample_nearest2d", upsample_nearest2d_fixtures), ("avg_pool2d", avg_pool2d_fixtures),
            ("conv2d", conv2d_fixtures), ("group_norm", group_norm_fixtures))


def main():
    torch.set_num_threads(1)
    os.makedirs(FIXTURE_DIR, exist_ok=True)
    meta = {"generator": "tests/reference/make_image_op_fixtures.py", "torch": torch.__version__.split("+")[0]}
    for name, fn in FAMILIES:
        path = os.path.join(FIXTURE_DIR, name + ".safetensors")
        save_safetensors(path, fn(), meta)
        print(f"wrote {path} ({os.path.getsize(path)} bytes)")


if __name__ == "__main__":
    main()
