// PyTorch golden fixtures of the core ops (tests/reference/make_*fixtures.py writing
// tests/reference/fixtures/<family>.safetensors, read via MOH_FIXTURE_DIR): loading a family, keyed
// access that names a missing tensor, and the float32 / float64 tolerances the golden tests use.
#pragma once

#include <map>
#include <string>

#include "core/io/safetensors.h"
#include "core/tensor.h"
#include "tests/test_paths.h"

namespace moh::golden {

inline std::string fixture_path(const std::string& family) {
  return MOH_TEST_PATH(MOH_FIXTURE_DIR) + "/" + family + ".safetensors";
}

struct Fixture {
  std::map<std::string, Tensor> tensors;
  Tensor operator[](const std::string& key) const {
    auto it = tensors.find(key);
    if (it == tensors.end()) throw Error("golden fixture has no tensor '" + key + "'");
    return it->second;
  }
};

inline Fixture load(const std::string& family) { return {load_safetensors(fixture_path(family))}; }

// Every family holds its tensors twice, "f32.*" and "f64.*"; results must match torch to 1e-5
// relative in float32 and 1e-10 in float64.
inline const char* const kPrefixes[] = {"f32", "f64"};
inline double tol(const std::string& prefix) { return prefix == "f32" ? 1e-5 : 1e-10; }

}  // namespace moh::golden
