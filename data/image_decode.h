// JPEG (libjpeg-turbo) and PNG (libpng) decoding to 8-bit pixels, and encoding for tools and tests.
// Decoded images are uint8 HWC, row-major, with 1 (grey) or 3 (RGB) channels as requested: grey is
// replicated to RGB, RGB becomes grey with the ITU-R 601 weights libjpeg and PIL use, PNG palettes are
// expanded, 16-bit samples keep their high byte and alpha is dropped (PIL's convert("RGB")). The format
// comes from the file's first bytes, never its name. A corrupt or truncated file throws moh::Error naming
// the file; the libraries' longjmp error paths never skip a destructor and leak nothing. Two limits hold
// before any pixel memory is allocated: at most 2^28 pixels, and a memory budget per decode (bytes),
// so a small file claiming a huge image (a compressed all-zero 20000 x 20000 PNG is 1 MB) is an error,
// not gigabytes per decoding thread.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace moh {

struct Image {
  int64_t height = 0, width = 0, channels = 0;
  std::vector<uint8_t> pixels;  // height * width * channels bytes, HWC
  int64_t reduction = 1;        // the image was decoded at ceil(side / reduction) of its full size
};

enum class ImageFormat { Jpeg, Png };

// Recognises JPEG (FF D8 FF) and PNG (the 8-byte signature); anything else throws, naming `what`.
ImageFormat sniff_image_format(const uint8_t* data, size_t size, const std::string& what);

// Called with the full height and width before decoding; returns the reduction 1, 2, 4 or 8 at which
// a JPEG is then decoded (libjpeg's DCT scaling, much faster than a full decode and a resize). PNG files
// are always decoded at full size.
using ReductionFn = std::function<int64_t(int64_t height, int64_t width)>;

// The memory one decode may spend by default (bytes): a 8192 x 8192 RGBA PNG decoded to RGB fits.
inline constexpr int64_t kDefaultDecodeBudgetBytes = int64_t(512) << 20;

// Decodes an in-memory JPEG or PNG to `channels` (1 or 3) channels; `what` names the source in errors.
// `budget_bytes` bounds the peak memory of the decode, counted from the header before anything is
// allocated: the output pixels, the library's output-format buffer when it differs (RGBA -> RGB,
// CMYK -> RGB), a multi-scan (progressive) JPEG's whole-image coefficient buffer, libpng's row buffers
// and the row pointers. An image over it throws, naming the source, its size, the cost and the budget.
Image decode_image(const uint8_t* data, size_t size, int64_t channels, const std::string& what,
                   const ReductionFn& reduction = {}, int64_t budget_bytes = kDefaultDecodeBudgetBytes);

// The whole file; errors name it.
std::vector<uint8_t> read_file_bytes(const std::string& path);
// Writes `bytes` to `path` (replacing it); errors name the file.
void write_file_bytes(const std::string& path, const std::vector<uint8_t>& bytes);
// decode_image on the file's bytes.
Image read_image(const std::string& path, int64_t channels, const ReductionFn& reduction = {},
                 int64_t budget_bytes = kDefaultDecodeBudgetBytes);

// Baseline JPEG at `quality` (1..100, 4:2:0 chroma for RGB) and 8-bit PNG of a 1- or 3-channel image.
std::vector<uint8_t> encode_jpeg(const Image& image, int quality = 90);
std::vector<uint8_t> encode_png(const Image& image);

}  // namespace moh
