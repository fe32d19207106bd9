// Process-wide numerics switches (core/backend_flags.h).
#include "core/backend_flags.h"

#include <atomic>

#include "core/error.h"

namespace moh {
namespace {
std::atomic<bool> g_deterministic{false};
std::atomic<bool> g_tf32{false};
std::atomic<DType> g_gemm_autocast{DType::Float32};
}  // namespace

void set_deterministic_algorithms(bool on) { g_deterministic.store(on); }
bool deterministic_algorithms() { return g_deterministic.load(); }
void set_allow_tf32(bool on) { g_tf32.store(on); }
bool allow_tf32() { return g_tf32.load(); }

void set_gemm_autocast(DType dtype) {
  MOH_CHECK(dtype == DType::Float32 || dtype == DType::BFloat16 || dtype == DType::Float16,
            "set_gemm_autocast: expected float32 (off), bfloat16 or float16, got ", dtype_name(dtype));
  g_gemm_autocast.store(dtype);
}
DType gemm_autocast() { return g_gemm_autocast.load(); }

}  // namespace moh
