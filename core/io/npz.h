// NumPy .npz files: a zip archive whose members "<key>.npy" are .npy images (core/io/npy.h), as np.savez
// (members stored) and np.savez_compressed (members deflated) write them; np.load(path)[key] reads them.
// Reading checks the zip structure (end-of-central-directory record, zip64 records, central directory and
// local headers within the file, no encryption, one disk), each member's CRC-32 and sizes, and parses each
// member as a .npy; a deflated member may expand at most 1032-fold (deflate's limit), so a lying size
// cannot make the reader allocate without bound. A member's bytes are held in memory once beside its tensor.
// Writing stores members uncompressed (what np.savez does), with correct CRC-32s, zip64 records wherever
// a size or offset passes 4 GiB (a 50k-sample ImageNet 256 samples.npz is ~9.8 GB), atomically. Errors are
// moh::Error naming the file and, where there is one, the member.
#pragma once

#include <map>
#include <string>

#include "core/tensor.h"

namespace moh {

// Every member, by key (the member name without ".npy"); contiguous CPU tensors.
std::map<std::string, Tensor> load_npz(const std::string& path);
// Writes the arrays as members "<key>.npy" (keys non-empty, without '/'), atomically.
void save_npz(const std::string& path, const std::map<std::string, Tensor>& arrays);

}  // namespace moh
