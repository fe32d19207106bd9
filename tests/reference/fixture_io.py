"""Shared helpers of the golden fixture scripts (tests/reference/make_*.py): the writer and the weight randomizer.

save_safetensors writes the safetensors format by hand (8-byte little-endian header length, JSON
header with keys sorted, padded with spaces to a multiple of 8, then the raw tensor bytes in name
order), so the safetensors pip package is not needed and a re-run rewrites byte-identical files.
Each file is written to a temp file, then renamed over the target.
"""

import json
import os
import sys

import torch

ST_DTYPES = {torch.float32: "F32", torch.float64: "F64", torch.int64: "I64"}


def randomize_for_golden(model):
    """Random weights at a larger scale than any training init, so every layer moves the outputs: norm
    weights 1 + 0.2 N(0, 1), every other parameter 0.3 N(0, 1), in named_parameters() order."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name and name.endswith("weight"):
                p.copy_(1 + 0.2 * torch.randn_like(p))
            else:
                p.copy_(0.3 * torch.randn_like(p))


def save_safetensors(path, tensors, metadata):
    assert sys.byteorder == "little"
    header = {"__metadata__": metadata}
    blobs, offset = [], 0
    for name in sorted(tensors):
        t = tensors[name].detach().cpu().contiguous()
        data = t.numpy().tobytes()
        header[name] = {"dtype": ST_DTYPES[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(len(text).to_bytes(8, "little"))
        f.write(text)
        for data in blobs:
            f.write(data)
    os.replace(tmp, path)
