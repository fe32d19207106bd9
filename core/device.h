// Device: where a tensor's memory lives, CPU or CUDA(index). Parsed from "cpu", "cuda", "cuda:N".
#pragma once

#include <ostream>
#include <string>
#include <string_view>

namespace moh {

struct Device {
  enum class Kind : uint8_t { CPU, CUDA };
  Kind kind = Kind::CPU;
  int index = 0;

  static Device cpu() { return {Kind::CPU, 0}; }
  static Device cuda(int index = 0) { return {Kind::CUDA, index}; }
  static Device parse(std::string_view text);  // throws moh::Error naming the text

  bool is_cpu() const { return kind == Kind::CPU; }
  bool is_cuda() const { return kind == Kind::CUDA; }
  std::string str() const;
  bool operator==(const Device&) const = default;
};

std::ostream& operator<<(std::ostream& out, const Device& d);

// True when this build contains the CUDA backend (it may still find no GPU at run time).
bool cuda_compiled();
// Number of usable CUDA devices: 0 in a CPU-only build or on a machine without a GPU/driver.
int cuda_device_count();
// Waits until the work queued on the device (its compute stream) is done; nothing to wait for on the CPU,
// whose ops return finished. Host clocks around device work need it (benchmarks).
void synchronize(Device device);

}  // namespace moh
