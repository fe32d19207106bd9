// CUDA runtime queries used by the whole framework (device discovery). Compiled only when nvcc
// is found; a machine without a driver or GPU reports zero devices instead of failing.
#include <cuda_runtime.h>

#include "core/device.h"

namespace moh {

int cuda_device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no driver"/"no device" error
    return 0;
  }
  return count;
}

}  // namespace moh
