#!/usr/bin/python3
"""Golden fixture of the latent autoencoder (GoldenAutoencoder tests in tests/models/test_autoencoder.cpp).

Run with Debian's interpreter, which has python3-torch (1.13):

    /usr/bin/python3 tests/reference/make_autoencoder_fixture.py

Writes tests/reference/fixtures/autoencoder_small.safetensors: a small model of the twin in
autoencoder_reference.py (ch 8, ch_mult [1, 2], one ResnetBlock per level, mid attention, 4 norm groups,
2 image channels, 3 latent channels), its state dict ("state.<name>"), the input "x" [2, 2, 8, 8], the
posterior noise "noise", and, computed in float64 from those float32 values: the posterior "mean" and
"logvar", the reconstruction of the mean "recon_mean" and of the sample "recon_sample", the loss terms
("loss", "rec", "kl", L1 with beta 0.01) of the sample and the gradients of the loss with respect to the
input ("grad.x") and to every parameter ("grad.<name>"). Weights are random with a larger scale than the
default init, so every layer moves the outputs. Deterministic: one seed, one thread, sorted keys.
"""

import os

import torch

from autoencoder_reference import PRESETS, AutoencoderKL, loss_terms
from fixture_io import randomize_for_golden, save_safetensors

FIXTURE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")
CONFIG = dict(in_channels=2, ch=8, ch_mult=(1, 2), num_res_blocks=1, z_channels=3, mid_attention=True, groups=4)
BETA = 0.01


def main():
    torch.manual_seed(20261202)
    torch.set_num_threads(1)
    model = AutoencoderKL(**CONFIG)
    randomize_for_golden(model)
    x = torch.randn(2, CONFIG["in_channels"], 8, 8)
    noise = torch.randn(2, CONFIG["z_channels"], 4, 4)
    state = {k: v.clone() for k, v in model.state_dict().items()}
    model = model.double()
    xd = x.double().requires_grad_(True)
    mean, logvar = model.encode(xd)
    recon_mean = model.decode(mean)
    sample = mean + torch.exp(0.5 * logvar) * noise.double()
    recon_sample = model.decode(sample)
    loss, rec, kl = loss_terms(xd, recon_sample, mean, logvar, l1=True, beta=BETA)
    loss.backward()
    tensors = {f"state.{k}": v.float() for k, v in state.items()}
    tensors.update(x=x, noise=noise, mean=mean.detach(), logvar=logvar.detach(), recon_mean=recon_mean.detach(),
                   recon_sample=recon_sample.detach(), loss=loss.detach(), rec=rec.detach(), kl=kl.detach())
    tensors["grad.x"] = xd.grad
    for name, p in model.named_parameters():
        tensors[f"grad.{name}"] = p.grad
    metadata = {k: str(v) for k, v in CONFIG.items()}
    metadata["beta"] = str(BETA)
    metadata["generator"] = "tests/reference/make_autoencoder_fixture.py"
    save_safetensors(os.path.join(FIXTURE_DIR, "autoencoder_small.safetensors"), tensors, metadata)
    sd = AutoencoderKL(**PRESETS["sd"])
    print("sd preset parameters:", sum(p.numel() for p in sd.parameters()))


if __name__ == "__main__":
    main()
