// Helpers of the diffusion tests: the golden fixture of tests/reference/make_diffusion_fixture.py
// (diffusion.safetensors) and host-side element access.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "core/io/safetensors.h"
#include "core/tensor.h"
#include "tests/test_paths.h"

namespace moh::test {

inline const std::map<std::string, Tensor>& diffusion_fixture() {
  static const std::map<std::string, Tensor> tensors = [] {
    const std::string path = MOH_TEST_PATH(MOH_FIXTURE_DIR) + "/diffusion.safetensors";
    EXPECT_EQ(load_safetensors_metadata(path).at("generator"), "tests/reference/make_diffusion_fixture.py");
    return load_safetensors(path);
  }();
  return tensors;
}

inline const Tensor& fixture_tensor(const std::string& name) {
  const auto& f = diffusion_fixture();
  const auto it = f.find(name);
  if (it == f.end()) throw std::runtime_error("diffusion fixture has no tensor '" + name + "'");
  return it->second;
}

inline std::vector<double> values(const Tensor& t) { return t.to_vector<double>(); }

}  // namespace moh::test
