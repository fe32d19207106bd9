"""PyTorch twin of moh's latent autoencoder (models/autoencoder), written here from the structure of
latent diffusion's KL autoencoder (Encoder, Decoder, ResnetBlock, AttnBlock, Downsample with (0, 1, 0, 1)
padding, Upsample, quant_conv, post_quant_conv; GroupNorm eps 1e-6), with the same module names, so its
state dict and moh's match key for key. Used by make_autoencoder_fixture.py (golden tests) and
scripts/bench_autoencoder_vs_torch.py (speed).
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

PRESETS = {
    "fmnist": dict(in_channels=1, ch=16, ch_mult=(1, 2, 4), num_res_blocks=1, z_channels=4, mid_attention=True,
                   groups=8),
    "sd": dict(in_channels=3, ch=128, ch_mult=(1, 2, 4, 4), num_res_blocks=2, z_channels=4, mid_attention=True,
               groups=32),
}


def norm(c, groups):
    return nn.GroupNorm(groups, c, eps=1e-6, affine=True)


class ResnetBlock(nn.Module):
    def __init__(self, cin, cout, groups):
        super().__init__()
        self.norm1 = norm(cin, groups)
        self.conv1 = nn.Conv2d(cin, cout, 3, padding=1)
        self.norm2 = norm(cout, groups)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1)
        if cin != cout:
            self.nin_shortcut = nn.Conv2d(cin, cout, 1)

    def forward(self, x):
        h = self.conv1(F.silu(self.norm1(x)))
        h = self.conv2(F.silu(self.norm2(h)))
        return (self.nin_shortcut(x) if hasattr(self, "nin_shortcut") else x) + h


class AttnBlock(nn.Module):
    def __init__(self, c, groups):
        super().__init__()
        self.norm = norm(c, groups)
        self.q = nn.Conv2d(c, c, 1)
        self.k = nn.Conv2d(c, c, 1)
        self.v = nn.Conv2d(c, c, 1)
        self.proj_out = nn.Conv2d(c, c, 1)

    def forward(self, x):
        b, c, h, w = x.shape
        n = self.norm(x)
        q = self.q(n).reshape(b, c, h * w).permute(0, 2, 1)
        k = self.k(n).reshape(b, c, h * w)
        v = self.v(n).reshape(b, c, h * w)
        a = torch.softmax(torch.bmm(q, k) * c ** -0.5, dim=2)  # [b, query, key]
        out = torch.bmm(v, a.permute(0, 2, 1)).reshape(b, c, h, w)
        return x + self.proj_out(out)


class Downsample(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3, stride=2, padding=0)

    def forward(self, x):
        return self.conv(F.pad(x, (0, 1, 0, 1)))


class Upsample(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3, padding=1)

    def forward(self, x):
        return self.conv(F.interpolate(x, scale_factor=2.0, mode="nearest"))


class Mid(nn.Module):
    def __init__(self, c, attention, groups):
        super().__init__()
        self.block_1 = ResnetBlock(c, c, groups)
        if attention:
            self.attn_1 = AttnBlock(c, groups)
        self.block_2 = ResnetBlock(c, c, groups)

    def forward(self, x):
        h = self.block_1(x)
        if hasattr(self, "attn_1"):
            h = self.attn_1(h)
        return self.block_2(h)


class Encoder(nn.Module):
    def __init__(self, in_channels, ch, ch_mult, num_res_blocks, z_channels, mid_attention, groups):
        super().__init__()
        self.conv_in = nn.Conv2d(in_channels, ch, 3, padding=1)
        self.down = nn.ModuleList()
        c = ch
        for i, m in enumerate(ch_mult):
            level = nn.Module()
            level.block = nn.ModuleList()
            for _ in range(num_res_blocks):
                level.block.append(ResnetBlock(c, ch * m, groups))
                c = ch * m
            if i + 1 < len(ch_mult):
                level.downsample = Downsample(c)
            self.down.append(level)
        self.mid = Mid(c, mid_attention, groups)
        self.norm_out = norm(c, groups)
        self.conv_out = nn.Conv2d(c, 2 * z_channels, 3, padding=1)

    def forward(self, x):
        h = self.conv_in(x)
        for level in self.down:
            for block in level.block:
                h = block(h)
            if hasattr(level, "downsample"):
                h = level.downsample(h)
        return self.conv_out(F.silu(self.norm_out(self.mid(h))))


class Decoder(nn.Module):
    def __init__(self, in_channels, ch, ch_mult, num_res_blocks, z_channels, mid_attention, groups):
        super().__init__()
        c = ch * ch_mult[-1]
        self.conv_in = nn.Conv2d(z_channels, c, 3, padding=1)
        self.mid = Mid(c, mid_attention, groups)
        levels = [None] * len(ch_mult)
        for i in reversed(range(len(ch_mult))):
            level = nn.Module()
            level.block = nn.ModuleList()
            for _ in range(num_res_blocks + 1):
                level.block.append(ResnetBlock(c, ch * ch_mult[i], groups))
                c = ch * ch_mult[i]
            if i > 0:
                level.upsample = Upsample(c)
            levels[i] = level
        self.up = nn.ModuleList(levels)
        self.norm_out = norm(c, groups)
        self.conv_out = nn.Conv2d(c, in_channels, 3, padding=1)

    def forward(self, z):
        h = self.mid(self.conv_in(z))
        for level in reversed(self.up):
            for block in level.block:
                h = block(h)
            if hasattr(level, "upsample"):
                h = level.upsample(h)
        return self.conv_out(F.silu(self.norm_out(h)))


class AutoencoderKL(nn.Module):
    def __init__(self, **cfg):
        super().__init__()
        self.encoder = Encoder(**cfg)
        self.decoder = Decoder(**cfg)
        z = cfg["z_channels"]
        self.quant_conv = nn.Conv2d(2 * z, 2 * z, 1)
        self.post_quant_conv = nn.Conv2d(z, z, 1)
        self.z = z

    def encode(self, x):
        moments = self.quant_conv(self.encoder(x))
        mean, logvar = moments[:, : self.z], moments[:, self.z:]
        return mean, torch.clamp(logvar, -30.0, 20.0)

    def decode(self, z):
        return self.decoder(self.post_quant_conv(z))


def loss_terms(x, recon, mean, logvar, l1=True, beta=1e-6):
    """moh's autoencoder_loss: mean pixel loss + beta * (KL per image) / (elements per image)."""
    diff = recon - x
    rec = diff.abs().mean() if l1 else (diff * diff).mean()
    kl = (0.5 * (mean * mean + logvar.exp() - 1.0 - logvar).sum(dim=(1, 2, 3))).mean()
    return rec + beta * kl / (x[0].numel()), rec, kl
