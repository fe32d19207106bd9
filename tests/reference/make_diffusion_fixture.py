#!/usr/bin/python3
"""Golden fixture of the Gaussian diffusion math (tests/models/test_diffusion*.cpp).

Run with Debian's interpreter, which has python3-torch (1.13):

    /usr/bin/python3 tests/reference/make_diffusion_fixture.py

Writes tests/reference/fixtures/diffusion.safetensors (about 20 KB), all float64 (int64 for steps), from
a transcription in torch of improved-diffusion's / DiT's gaussian_diffusion.py, respace.py and
diffusion_utils.py (written here by hand, in float64 throughout):
  - "<schedule>.<table>" [7]: the derived tables of the 1000-step linear and cosine schedules at the
    steps "probe_t";
  - "spaced.<name>": space_timesteps(1000, spec) sorted, for the specs "250", "ddim50" and "10,15,20"
    (the name has "_" for ",");
  - "<case>.*": one training-loss case each: x_start, noise, t, model_output [N, 2C, H, W] in, and out
    x_t, mse, vb, loss [N], grad_output (d sum(loss) / d model_output; the VB term sees the mean
    detached), and p_mean_variance of the output with clip_denoised: mean, log_variance, pred_xstart.
    Case "loss_linear": 1000 linear steps, LossType.MSE; case "loss_cosine_spaced": 1000 cosine steps respaced
    "10,15,20" (45 steps), LossType.RESCALED_MSE (vb * 45 / 1000).
x_start holds exact -1 and 1 entries and values just inside them, so every branch of the discretised
log-likelihood is used; t holds 0 (the decoder NLL) and the last step. Deterministic: one seed, one thread.
"""

import math
import os

import torch

from fixture_io import save_safetensors

FIXTURE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")
PROBE_T = [0, 1, 2, 250, 499, 998, 999]
TABLES = ["betas", "alphas_cumprod", "alphas_cumprod_prev", "sqrt_alphas_cumprod", "sqrt_one_minus_alphas_cumprod",
          "log_one_minus_alphas_cumprod", "sqrt_recip_alphas_cumprod", "sqrt_recipm1_alphas_cumprod",
          "posterior_variance", "posterior_log_variance_clipped", "posterior_mean_coef1", "posterior_mean_coef2"]
D = torch.float64


def linear_betas(steps):
    scale = 1000 / steps
    return torch.linspace(scale * 1e-4, scale * 0.02, steps, dtype=D)


def cosine_betas(steps, max_beta=0.999):
    def alpha_bar(s):
        return math.cos((s + 0.008) / 1.008 * math.pi / 2) ** 2
    return torch.tensor([min(1 - alpha_bar((i + 1) / steps) / alpha_bar(i / steps), max_beta) for i in range(steps)],
                        dtype=D)


def make_tables(betas):
    alphas = 1 - betas
    ac = torch.cumprod(alphas, 0)
    ac_prev = torch.cat([torch.ones(1, dtype=D), ac[:-1]])
    post_var = betas * (1 - ac_prev) / (1 - ac)
    return {
        "betas": betas,
        "log_betas": torch.log(betas),
        "alphas_cumprod": ac,
        "alphas_cumprod_prev": ac_prev,
        "sqrt_alphas_cumprod": ac.sqrt(),
        "sqrt_one_minus_alphas_cumprod": (1 - ac).sqrt(),
        "log_one_minus_alphas_cumprod": torch.log(1 - ac),
        "sqrt_recip_alphas_cumprod": (1 / ac).sqrt(),
        "sqrt_recipm1_alphas_cumprod": (1 / ac - 1).sqrt(),
        "posterior_variance": post_var,
        "posterior_log_variance_clipped": torch.log(torch.cat([post_var[1:2], post_var[1:]])),
        "posterior_mean_coef1": betas * ac_prev.sqrt() / (1 - ac),
        "posterior_mean_coef2": (1 - ac_prev) * alphas.sqrt() / (1 - ac),
    }


def space_timesteps(steps, spec):
    if spec.startswith("ddim"):
        want = int(spec[4:])
        for stride in range(1, steps):
            if len(range(0, steps, stride)) == want:
                return list(range(0, steps, stride))
        raise ValueError(spec)
    counts = [int(c) for c in spec.split(",")]
    size_per, extra = divmod(steps, len(counts))
    start, kept = 0, []
    for k, count in enumerate(counts):
        size = size_per + (1 if k < extra else 0)
        stride = 1 if count <= 1 else (size - 1) / (count - 1)
        at = 0.0
        for _ in range(count):
            kept.append(start + round(at))
            at += stride
        start += size
    return sorted(set(kept))


def respaced_betas(base_betas, kept):
    ac = torch.cumprod(1 - base_betas, 0)
    last, betas = 1.0, []
    for k in kept:
        betas.append(1 - ac[k].item() / last)
        last = ac[k].item()
    return torch.tensor(betas, dtype=D)


def per_sample(table, t, ndim):
    return table[t].reshape(-1, *([1] * (ndim - 1)))


def normal_kl(m1, lv1, m2, lv2):
    return 0.5 * (-1.0 + lv2 - lv1 + torch.exp(lv1 - lv2) + (m1 - m2) ** 2 * torch.exp(-lv2))


def approx_cdf(x):
    return 0.5 * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def discretized_ll(x, means, log_scales):
    centered = x - means
    inv = torch.exp(-log_scales)
    cdf_plus = approx_cdf(inv * (centered + 1 / 255))
    cdf_min = approx_cdf(inv * (centered - 1 / 255))
    log_plus = torch.log(cdf_plus.clamp(min=1e-12))
    log_one_minus_min = torch.log((1 - cdf_min).clamp(min=1e-12))
    log_delta = torch.log((cdf_plus - cdf_min).clamp(min=1e-12))
    return torch.where(x < -0.999, log_plus, torch.where(x > 0.999, log_one_minus_min, log_delta))


def p_mean_variance(tab, output, x_t, t, clip):
    eps, v = torch.split(output, x_t.shape[1], dim=1)
    n = x_t.dim()
    frac = (v + 1) / 2
    log_var = frac * per_sample(tab["log_betas"], t, n) + (1 - frac) * per_sample(tab["posterior_log_variance_clipped"], t, n)
    x0 = per_sample(tab["sqrt_recip_alphas_cumprod"], t, n) * x_t - per_sample(tab["sqrt_recipm1_alphas_cumprod"], t, n) * eps
    if clip:
        x0 = x0.clamp(-1, 1)
    mean = per_sample(tab["posterior_mean_coef1"], t, n) * x0 + per_sample(tab["posterior_mean_coef2"], t, n) * x_t
    return mean, log_var, x0


def mean_flat(x):
    return x.mean(dim=list(range(1, x.dim())))


def training_losses(tab, output, x_start, t, noise, rescaled):
    n = x_start.dim()
    x_t = per_sample(tab["sqrt_alphas_cumprod"], t, n) * x_start + per_sample(tab["sqrt_one_minus_alphas_cumprod"], t, n) * noise
    eps, v = torch.split(output, x_start.shape[1], dim=1)
    frozen = torch.cat([eps.detach(), v], dim=1)
    true_mean = per_sample(tab["posterior_mean_coef1"], t, n) * x_start + per_sample(tab["posterior_mean_coef2"], t, n) * x_t
    true_log_var = per_sample(tab["posterior_log_variance_clipped"], t, n)
    mean, log_var, _ = p_mean_variance(tab, frozen, x_t, t, clip=False)
    kl = mean_flat(normal_kl(true_mean, true_log_var, mean, log_var)) / math.log(2.0)
    nll = mean_flat(-discretized_ll(x_start, mean, 0.5 * log_var)) / math.log(2.0)
    vb = torch.where(t == 0, nll, kl)
    if rescaled:
        vb = vb * (len(tab["betas"]) / 1000.0)
    mse = mean_flat((noise - eps) ** 2)
    return x_t, mse, vb, mse + vb


def loss_case(prefix, tab, t, rescaled, tensors):
    n, c, h, w = 4, 2, 3, 3
    x_start = torch.rand(n, c, h, w, dtype=D) * 2 - 1
    flat = x_start.view(-1)
    flat[0], flat[1], flat[2], flat[3], flat[40], flat[41] = -1.0, 1.0, -0.9995, 0.9995, -1.0, 1.0
    noise = torch.randn(n, c, h, w, dtype=D)
    eps = noise + 0.3 * torch.randn(n, c, h, w, dtype=D)
    output = torch.cat([eps, torch.rand(n, c, h, w, dtype=D) * 2 - 1], dim=1).requires_grad_(True)
    t = torch.tensor(t, dtype=torch.int64)
    x_t, mse, vb, loss = training_losses(tab, output, x_start, t, noise, rescaled)
    loss.sum().backward()
    mean, log_var, x0 = p_mean_variance(tab, output.detach(), x_t, t, clip=True)
    values = dict(x_start=x_start, noise=noise, t=t, model_output=output.detach(), x_t=x_t, mse=mse, vb=vb, loss=loss,
                  grad_output=output.grad, mean=mean, log_variance=log_var, pred_xstart=x0)
    for name, value in values.items():
        tensors[f"{prefix}.{name}"] = value.detach()


def main():
    torch.manual_seed(20261202)
    torch.set_num_threads(1)
    tensors = {"probe_t": torch.tensor(PROBE_T, dtype=torch.int64)}
    for name, betas in (("linear", linear_betas(1000)), ("cosine", cosine_betas(1000))):
        tab = make_tables(betas)
        for table in TABLES:
            tensors[f"{name}.{table}"] = tab[table][PROBE_T]
    for spec in ("250", "ddim50", "10,15,20"):
        tensors["spaced." + spec.replace(",", "_")] = torch.tensor(space_timesteps(1000, spec), dtype=torch.int64)
    loss_case("loss_linear", make_tables(linear_betas(1000)), [0, 1, 500, 999], False, tensors)
    cosine = cosine_betas(1000)
    loss_case("loss_cosine_spaced", make_tables(respaced_betas(cosine, space_timesteps(1000, "10,15,20"))), [0, 1, 22, 44],
              True, tensors)
    metadata = {"generator": "tests/reference/make_diffusion_fixture.py", "probe_t": ",".join(map(str, PROBE_T))}
    save_safetensors(os.path.join(FIXTURE_DIR, "diffusion.safetensors"), tensors, metadata)


if __name__ == "__main__":
    main()
