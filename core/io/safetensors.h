// Safetensors files (https://github.com/huggingface/safetensors): an 8-byte little-endian header
// length N, N bytes of JSON {name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__":
// {string: string}}, then the raw little-endian tensor bytes. Loading validates the whole header
// (dtypes, shapes, offsets in range, sized shape * itemsize, no overlap, no holes) before reading
// any data and throws moh::Error naming the file and tensor. Saving is atomic: path + ".tmp" is
// written, fsync'ed and renamed over path, so a crash never leaves a partial file at `path`.
#pragma once

#include <map>
#include <string>

#include "core/tensor.h"

namespace moh {

// Every tensor in the file, contiguous, on the CPU.
std::map<std::string, Tensor> load_safetensors(const std::string& path);
// The "__metadata__" map only (reads just the header); empty when the file has none.
std::map<std::string, std::string> load_safetensors_metadata(const std::string& path);
// Writes tensors (any device, any layout; stored contiguous) in name order, plus string metadata.
void save_safetensors(const std::string& path, const std::map<std::string, Tensor>& tensors,
                      const std::map<std::string, std::string>& metadata = {});

}  // namespace moh
