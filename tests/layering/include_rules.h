// The include-layering rules of the source tree and the checker that applies them (README.md,
// "Layering"). Every quoted or angled #include that names a file of this repository is rooted at a
// top-level folder ("core/tensor.h", never "tensor.h"), and points down the layers only:
//   core (0) -> autograd (1) -> layers (2) -> models | data (3, siblings) -> trainers (4) -> tools (5)
//   -> bench | fuzz | tests (6, the leaves: programs and suites built on top of the library).
// A file may include its own folder and the folders of lower layers; siblings (models and data; the
// leaves) may not include each other, except the edges in kCrossEdges. Inside core the backends
// stay apart: core/cpu and core/cuda do not include each other; they share core/kernels (each kernel
// declared once for both) and core/math (per-element math, op kinds), which include no backend and no
// op front end (core/ops/); core/math, the lower of the two, includes neither core/kernels nor the
// I/O and distributed folders.
// The checker is plain text processing: it needs neither the library nor a compiler.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace moh::layering {

// One `#include` of a repository file: where it is (path relative to the source root) and what it names.
struct IncludeLine {
  std::string file;  // e.g. "core/cuda/binary.cu"
  int line = 0;      // 1-based
  std::string target;  // e.g. "core/kernels/elementwise.h"
};

// The top-level folders the rules know, lowest layer first.
const std::vector<std::string>& source_folders();

// Every #include line in the C++/CUDA files (.h .hpp .cpp .cu .cuh .inc) under root/folder, with paths
// relative to root. Angled includes count only when their first component is a source folder (so
// <vector> and <cuda_runtime.h> are not ours); quoted ones always count. Files in sorted order.
std::vector<IncludeLine> scan_includes(const std::filesystem::path& root, const std::string& folder);

// One message per include that breaks a rule: "file:line: includes \"target\": why".
std::vector<std::string> layering_violations(const std::vector<IncludeLine>& includes);

}  // namespace moh::layering
