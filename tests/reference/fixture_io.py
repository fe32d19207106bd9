"""Shared writer for the golden fixtures (tests/reference/make_*.py).

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
