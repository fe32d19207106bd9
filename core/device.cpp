// Device parsing and printing.
#include "core/device.h"

#include <charconv>

#include "core/error.h"

namespace moh {

Device Device::parse(std::string_view text) {
  if (text == "cpu") return cpu();
  if (text == "cuda") return cuda(0);
  if (text.starts_with("cuda:")) {
    std::string_view num = text.substr(5);
    int index = -1;
    auto [end, ec] = std::from_chars(num.data(), num.data() + num.size(), index);
    if (ec == std::errc() && end == num.data() + num.size() && index >= 0 && !num.empty()) return cuda(index);
  }
  MOH_FAIL("invalid device '", text, "' (expected cpu, cuda or cuda:N)");
}

std::string Device::str() const { return is_cpu() ? "cpu" : "cuda:" + std::to_string(index); }

std::ostream& operator<<(std::ostream& out, const Device& d) { return out << d.str(); }

#if defined(MOH_WITH_CUDA)
bool cuda_compiled() { return true; }  // cuda_device_count() and synchronize() live in core/cuda/runtime.cpp
#else
bool cuda_compiled() { return false; }
int cuda_device_count() { return 0; }
void synchronize(Device device) {
  MOH_CHECK(device.is_cpu(), "synchronize(", device, "): this build has no CUDA backend (configure with -DMOH_CUDA=ON)");
}
#endif

}  // namespace moh
