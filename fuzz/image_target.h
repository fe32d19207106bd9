// The read step of the jpeg and png targets: decode_image as the image-folder loader calls it, with the
// channel count (1 or 3) and the JPEG reduction (1, 2, 4, 8) taken from the input's length so both
// vary, and a 16 MB decode budget (the checks of the loader's 512 MB default, at fuzzing speed: a
// few hundred bytes can claim a budget-sized image, whose decode then takes a second under ASan).
#pragma once

#include "data/image_decode.h"
#include "fuzz/fuzz_target.h"

namespace moh::fuzz {

inline void decode_as_loader(const uint8_t* data, size_t size) {
  const int64_t channels = size % 2 ? 1 : 3;
  const int64_t reduction = int64_t(1) << (size / 2 % 4);
  decode_image(data, size, channels, "fuzz input", [&](int64_t, int64_t) { return reduction; },
               int64_t(16) << 20);
}

}  // namespace moh::fuzz
