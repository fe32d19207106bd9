// JPEG/PNG codecs on libjpeg-turbo and libpng. Both libraries report errors by longjmp; every library
// call runs inside guarded(), whose frame holds the setjmp, and the code between the setjmp and the
// library holds only trivially destructible locals, so a longjmp skips no destructor. Library state and
// buffers are owned by RAII holders in the calling frame, which run their cleanup when the error is
// turned into a moh::Error.
#include "data/image_decode.h"

#include <jerror.h>
#include <jpeglib.h>
#include <png.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <memory>

#include "core/error.h"

namespace moh {
namespace {

// Largest decoded image accepted (pixels): far above any photo, below what a corrupt header could claim.
constexpr int64_t kMaxPixels = int64_t(1) << 28;

// Runs f; returns false when a library error longjmp'ed back here instead.
template <class F>
bool guarded(std::jmp_buf& jump, F&& f) {
  if (setjmp(jump)) return false;
  f();
  return true;
}

std::string hex_prefix(const uint8_t* data, size_t size) {
  std::string s;
  char buf[4];
  for (size_t i = 0; i < std::min<size_t>(size, 8); ++i) {
    std::snprintf(buf, sizeof buf, "%s%02x", i ? " " : "", data[i]);
    s += buf;
  }
  return s.empty() ? "nothing (empty)" : s;
}

void check_size(int64_t height, int64_t width, const std::string& what) {
  MOH_CHECK(height > 0 && width > 0 && height <= kMaxPixels / width, "decode_image: '", what, "': size ",
            width, "x", height, " is empty or too large (at most ", kMaxPixels, " pixels)");
}

int64_t megabytes(int64_t bytes) { return (bytes + (int64_t(1) << 20) - 1) >> 20; }

// Throws when decoding a width x height image of `format` needs more than the budget (bytes).
void check_budget(int64_t need, int64_t budget, int64_t height, int64_t width, const char* format,
                  const std::string& what) {
  MOH_CHECK(need <= budget, "decode_image: '", what, "': decoding this ", width, "x", height, " ", format,
            " needs ", megabytes(need), " MB, more than the decode memory budget of ", budget >> 20,
            " MB (data.decode_budget_mb)");
}

// ITU-R 601 luma in libjpeg's (and PIL's) 16-bit fixed point.
inline uint8_t luma(uint32_t r, uint32_t g, uint32_t b) {
  return uint8_t((19595 * r + 38470 * g + 7471 * b + 32768) >> 16);
}

// n pixels of `from` interleaved channels (1 grey, 2 grey+alpha, 3 RGB, 4 RGBA) to `to` (1 or 3); alpha
// is dropped.
void convert_pixels(const uint8_t* src, int64_t from, uint8_t* dst, int64_t to, int64_t n) {
  const bool colour = from >= 3;
  for (int64_t i = 0; i < n; ++i, src += from) {
    if (to == 1) {
      *dst++ = colour ? luma(src[0], src[1], src[2]) : src[0];
    } else {
      dst[0] = src[0];
      dst[1] = src[colour ? 1 : 0];
      dst[2] = src[colour ? 2 : 0];
      dst += 3;
    }
  }
}

Image make_image(int64_t height, int64_t width, int64_t channels) {
  Image img;
  img.height = height;
  img.width = width;
  img.channels = channels;
  img.pixels.resize(size_t(height * width * channels));
  return img;
}

// ---- JPEG ------------------------------------------------------------------------------------

struct JpegError {
  jpeg_error_mgr mgr;  // first: libjpeg hands back a jpeg_error_mgr*
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

void jpeg_fail(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<JpegError*>(cinfo->err);
  cinfo->err->format_message(cinfo, err->message);
  std::longjmp(err->jump, 1);
}

// Warnings (e.g. extraneous bytes before a marker) are ignored as PIL does, except the end of the data
// before the image is complete: a truncated file.
void jpeg_message(j_common_ptr cinfo, int level) {
  if (level < 0 && cinfo->err->msg_code == JWRN_JPEG_EOF) jpeg_fail(cinfo);
}

void init_jpeg_error(JpegError& err) {
  jpeg_std_error(&err.mgr);
  err.mgr.error_exit = jpeg_fail;
  err.mgr.emit_message = jpeg_message;
  std::strcpy(err.message, "unknown error");
}

struct JpegDecompress {
  jpeg_decompress_struct cinfo{};  // zeroed: destroying it before jpeg_create_decompress is a no-op
  JpegError err{};
  JpegDecompress() {
    init_jpeg_error(err);
    cinfo.err = &err.mgr;
  }
  ~JpegDecompress() { jpeg_destroy_decompress(&cinfo); }
  JpegDecompress(const JpegDecompress&) = delete;
  JpegDecompress& operator=(const JpegDecompress&) = delete;
};

// CMYK as libjpeg returns it: Adobe files (all Photoshop output) store inverted values.
void cmyk_to_rgb(const uint8_t* src, uint8_t* dst, int64_t n, bool inverted) {
  for (int64_t i = 0; i < n; ++i, src += 4, dst += 3) {
    const uint32_t k = inverted ? src[3] : 255u - src[3];
    for (int c = 0; c < 3; ++c) dst[c] = uint8_t(((inverted ? src[c] : 255u - src[c]) * k + 127) / 255);
  }
}

Image decode_jpeg(const uint8_t* data, size_t size, int64_t channels, const std::string& what,
                  const ReductionFn& reduction, int64_t budget) {
  JpegDecompress d;
  jpeg_decompress_struct& c = d.cinfo;
  auto fail = [&] { MOH_FAIL("decode_image: '", what, "': corrupt or truncated JPEG: ", d.err.message); };
  if (!guarded(d.err.jump, [&] {
        jpeg_create_decompress(&c);
        jpeg_mem_src(&c, data, static_cast<unsigned long>(size));
        jpeg_read_header(&c, TRUE);
      }))
    fail();
  check_size(c.image_height, c.image_width, what);
  const int64_t r = reduction ? reduction(c.image_height, c.image_width) : 1;
  MOH_CHECK(r == 1 || r == 2 || r == 4 || r == 8,
            "decode_image: the JPEG reduction must be 1, 2, 4 or 8, got ", r);
  const bool cmyk = c.jpeg_color_space == JCS_CMYK || c.jpeg_color_space == JCS_YCCK;
  const bool luma_source = c.jpeg_color_space == JCS_GRAYSCALE || c.jpeg_color_space == JCS_YCbCr;
  c.out_color_space = cmyk ? JCS_CMYK : channels == 1 && luma_source ? JCS_GRAYSCALE : JCS_RGB;
  c.scale_num = 1;
  c.scale_denom = unsigned(r);
  if (!guarded(d.err.jump, [&] { jpeg_calc_output_dimensions(&c); })) fail();

  const int64_t h = c.output_height, w = c.output_width, comps = c.out_color_components;
  int64_t need = h * w * (channels + (comps == channels ? 0 : comps) + (cmyk && channels == 1 ? 3 : 0));
  if (c.progressive_mode || c.comps_in_scan < c.num_components) {
    // Several scans: libjpeg keeps every DCT coefficient of the full-size image (64 x 2 bytes a block).
    for (int i = 0; i < c.num_components; ++i) {
      const jpeg_component_info& comp = c.comp_info[i];
      const auto round_up = [](int64_t v, int64_t m) { return (v + m - 1) / m * m; };
      need += round_up(comp.width_in_blocks, comp.h_samp_factor) * round_up(comp.height_in_blocks, comp.v_samp_factor) *
              int64_t(DCTSIZE2 * sizeof(JCOEF));
    }
  }
  check_budget(need, budget, c.image_height, c.image_width, "JPEG", what);
  Image img = make_image(h, w, channels);
  img.reduction = r;
  std::vector<uint8_t> raw(comps == channels ? 0 : size_t(h * w * comps));
  uint8_t* buf = comps == channels ? img.pixels.data() : raw.data();
  if (!guarded(d.err.jump, [&] {
        jpeg_start_decompress(&c);
        JSAMPROW rows[8];
        while (c.output_scanline < c.output_height) {
          const JDIMENSION n = std::min<JDIMENSION>(8, c.output_height - c.output_scanline);
          for (JDIMENSION i = 0; i < n; ++i)
            rows[i] = buf + size_t(c.output_scanline + i) * size_t(w * comps);
          jpeg_read_scanlines(&c, rows, n);
        }
      }))
    fail();
  if (cmyk) {
    std::vector<uint8_t> rgb(channels == 3 ? 0 : size_t(h * w * 3));
    uint8_t* dst = channels == 3 ? img.pixels.data() : rgb.data();
    cmyk_to_rgb(raw.data(), dst, h * w, c.saw_Adobe_marker);
    if (channels == 1) convert_pixels(rgb.data(), 3, img.pixels.data(), 1, h * w);
  } else if (comps != channels) {
    convert_pixels(raw.data(), comps, img.pixels.data(), channels, h * w);
  }
  return img;
}

// ---- PNG -------------------------------------------------------------------------------------

constexpr size_t kPngMessage = 200;

struct PngSource {
  const uint8_t* data;
  size_t size, pos;
};

void png_read_bytes(png_structp png, png_bytep out, png_size_t n) {
  auto* src = static_cast<PngSource*>(png_get_io_ptr(png));
  if (n > src->size - src->pos) png_error(png, "the file ends early (truncated)");
  std::memcpy(out, src->data + src->pos, n);
  src->pos += n;
}

void png_fail(png_structp png, png_const_charp message) {
  std::snprintf(static_cast<char*>(png_get_error_ptr(png)), kPngMessage, "%s", message);
  png_longjmp(png, 1);
}

void png_ignore_warning(png_structp, png_const_charp) {}

struct PngRead {
  png_structp png = nullptr;
  png_infop info = nullptr;
  char message[kPngMessage] = "unknown error";
  ~PngRead() {
    if (png) png_destroy_read_struct(&png, info ? &info : nullptr, nullptr);
  }
};

Image decode_png(const uint8_t* data, size_t size, int64_t channels, const std::string& what,
                 const ReductionFn& reduction, int64_t budget) {
  PngRead r;
  r.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, r.message, png_fail, png_ignore_warning);
  MOH_CHECK(r.png, "decode_image: '", what, "': cannot initialise libpng");
  r.info = png_create_info_struct(r.png);
  MOH_CHECK(r.info, "decode_image: '", what, "': cannot initialise libpng");
  PngSource src{data, size, 0};
  png_set_read_fn(r.png, &src, png_read_bytes);
  auto fail = [&] { MOH_FAIL("decode_image: '", what, "': corrupt or truncated PNG: ", r.message); };
  png_uint_32 w = 0, h = 0;
  int depth = 0, color = 0;
  if (!guarded(png_jmpbuf(r.png), [&] {
        png_read_info(r.png, r.info);
        png_get_IHDR(r.png, r.info, &w, &h, &depth, &color, nullptr, nullptr, nullptr);
        if (color == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(r.png);
        if (color == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(r.png);
        if (depth == 16) png_set_strip_16(r.png);
        png_set_interlace_handling(r.png);
        png_read_update_info(r.png, r.info);
      }))
    fail();
  check_size(h, w, what);
  if (reduction) reduction(h, w);  // PNG has no reduced decode: the image stays at full size
  const int64_t comps = png_get_channels(r.png, r.info);
  MOH_CHECK(comps >= 1 && comps <= 4 && png_get_rowbytes(r.png, r.info) == size_t(w) * size_t(comps),
            "decode_image: '", what, "': unexpected PNG layout after expansion (", comps, " channels)");
  // libpng's current and previous row (+1 filter byte each) hold the row as stored, before expansion.
  const int64_t stored_channels = color == PNG_COLOR_TYPE_GRAY_ALPHA ? 2
                                  : color == PNG_COLOR_TYPE_RGB      ? 3
                                  : color == PNG_COLOR_TYPE_RGB_ALPHA ? 4
                                                                      : 1;
  const int64_t stored_row = (int64_t(w) * stored_channels * depth + 7) / 8 + 1;
  check_budget(int64_t(h) * w * (channels + (comps == channels ? 0 : comps)) + 2 * stored_row +
                   int64_t(h) * int64_t(sizeof(png_bytep)),
               budget, h, w, "PNG", what);
  Image img = make_image(h, w, channels);
  std::vector<uint8_t> raw(comps == channels ? 0 : size_t(h) * w * size_t(comps));
  uint8_t* buf = comps == channels ? img.pixels.data() : raw.data();
  std::vector<png_bytep> rows(h);
  for (png_uint_32 y = 0; y < h; ++y) rows[y] = buf + size_t(y) * w * size_t(comps);
  if (!guarded(png_jmpbuf(r.png), [&] { png_read_image(r.png, rows.data()); })) fail();
  if (comps != channels) convert_pixels(raw.data(), comps, img.pixels.data(), channels, int64_t(h) * w);
  return img;
}

void check_encodable(const Image& image, const char* op) {
  MOH_CHECK(image.channels == 1 || image.channels == 3, op, ": images must have 1 or 3 channels, got ",
            image.channels);
  MOH_CHECK(image.height > 0 && image.width > 0 && image.height <= 65500 && image.width <= 65500, op,
            ": size ", image.width, "x", image.height, " is empty or above 65500 per side");
  MOH_CHECK(image.pixels.size() == size_t(image.height * image.width * image.channels), op, ": ",
            image.pixels.size(), " pixel bytes for a ", image.width, "x", image.height, "x", image.channels,
            " image");
}

// The JPEG encoder writes into a fixed buffer sized for the worst case; running out is an error, never
// a reallocation.
void jpeg_dest_noop(j_compress_ptr) {}
boolean jpeg_dest_full(j_compress_ptr cinfo) {
  cinfo->err->msg_code = JERR_BUFFER_SIZE;
  cinfo->err->error_exit(reinterpret_cast<j_common_ptr>(cinfo));
  return FALSE;
}

struct JpegCompress {
  jpeg_compress_struct cinfo{};
  JpegError err{};
  JpegCompress() {
    init_jpeg_error(err);
    cinfo.err = &err.mgr;
  }
  ~JpegCompress() { jpeg_destroy_compress(&cinfo); }
  JpegCompress(const JpegCompress&) = delete;
  JpegCompress& operator=(const JpegCompress&) = delete;
};

}  // namespace

ImageFormat sniff_image_format(const uint8_t* data, size_t size, const std::string& what) {
  static const uint8_t kPng[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (size >= 3 && data[0] == 0xff && data[1] == 0xd8 && data[2] == 0xff) return ImageFormat::Jpeg;
  if (size >= 8 && std::memcmp(data, kPng, 8) == 0) return ImageFormat::Png;
  MOH_FAIL("decode_image: '", what, "': not a JPEG or PNG file (it starts with ", hex_prefix(data, size),
           ")");
}

Image decode_image(const uint8_t* data, size_t size, int64_t channels, const std::string& what,
                   const ReductionFn& reduction, int64_t budget_bytes) {
  MOH_CHECK(channels == 1 || channels == 3, "decode_image: channels must be 1 or 3, got ", channels);
  MOH_CHECK(budget_bytes > 0, "decode_image: the decode memory budget must be > 0 bytes, got ", budget_bytes);
  return sniff_image_format(data, size, what) == ImageFormat::Jpeg
             ? decode_jpeg(data, size, channels, what, reduction, budget_bytes)
             : decode_png(data, size, channels, what, reduction, budget_bytes);
}

std::vector<uint8_t> read_file_bytes(const std::string& path) {
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), std::fclose);
  MOH_CHECK(f, "read_file_bytes: cannot open '", path, "': ", std::strerror(errno));
  struct stat st {};
  MOH_CHECK(::fstat(fileno(f.get()), &st) == 0 && S_ISREG(st.st_mode), "read_file_bytes: '", path,
            "' is not a regular file");
  std::vector<uint8_t> bytes(size_t(st.st_size));
  const size_t got = bytes.empty() ? 0 : std::fread(bytes.data(), 1, bytes.size(), f.get());
  MOH_CHECK(got == bytes.size(), "read_file_bytes: '", path, "': read ", got, " of ", bytes.size(),
            " bytes: ", std::ferror(f.get()) ? std::strerror(errno) : "the file shrank while being read");
  return bytes;
}

void write_file_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "wb"), std::fclose);
  MOH_CHECK(f, "write_file_bytes: cannot create '", path, "': ", std::strerror(errno));
  MOH_CHECK(bytes.empty() || std::fwrite(bytes.data(), 1, bytes.size(), f.get()) == bytes.size(),
            "write_file_bytes: '", path, "': ", std::strerror(errno));
  MOH_CHECK(std::fclose(f.release()) == 0, "write_file_bytes: '", path, "': ", std::strerror(errno));
}

Image read_image(const std::string& path, int64_t channels, const ReductionFn& reduction, int64_t budget_bytes) {
  const std::vector<uint8_t> bytes = read_file_bytes(path);
  return decode_image(bytes.data(), bytes.size(), channels, path, reduction, budget_bytes);
}

std::vector<uint8_t> encode_jpeg(const Image& image, int quality) {
  check_encodable(image, "encode_jpeg");
  MOH_CHECK(quality >= 1 && quality <= 100, "encode_jpeg: quality must be in 1..100, got ", quality);
  // TurboJPEG's worst case (tjBufSize) is 3 bytes per 16x16-padded pixel for 4:2:0 colour, 2 for grey.
  const auto pad = [](int64_t v) { return (v + 15) / 16 * 16; };
  std::vector<uint8_t> out(
      size_t(pad(image.height) * pad(image.width) * (image.channels == 1 ? 2 : 3) + 4096));
  JpegCompress z;
  jpeg_compress_struct& c = z.cinfo;
  jpeg_destination_mgr dest{};
  dest.init_destination = jpeg_dest_noop;
  dest.empty_output_buffer = jpeg_dest_full;
  dest.term_destination = jpeg_dest_noop;
  dest.next_output_byte = out.data();
  dest.free_in_buffer = out.size();
  const size_t stride = size_t(image.width * image.channels);
  if (!guarded(z.err.jump, [&] {
        jpeg_create_compress(&c);
        c.dest = &dest;
        c.image_width = JDIMENSION(image.width);
        c.image_height = JDIMENSION(image.height);
        c.input_components = int(image.channels);
        c.in_color_space = image.channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
        jpeg_set_defaults(&c);
        jpeg_set_quality(&c, quality, TRUE);
        jpeg_start_compress(&c, TRUE);
        while (c.next_scanline < c.image_height) {
          JSAMPROW row = const_cast<uint8_t*>(image.pixels.data()) + c.next_scanline * stride;
          jpeg_write_scanlines(&c, &row, 1);
        }
        jpeg_finish_compress(&c);
      }))
    MOH_FAIL("encode_jpeg: ", z.err.message);
  out.resize(out.size() - dest.free_in_buffer);
  return out;
}

std::vector<uint8_t> encode_png(const Image& image) {
  check_encodable(image, "encode_png");
  png_image desc{};
  desc.version = PNG_IMAGE_VERSION;
  desc.width = png_uint_32(image.width);
  desc.height = png_uint_32(image.height);
  desc.format = image.channels == 1 ? PNG_FORMAT_GRAY : PNG_FORMAT_RGB;
  png_alloc_size_t size = 0;
  std::vector<uint8_t> out;
  bool ok = png_image_write_to_memory(&desc, nullptr, &size, 0, image.pixels.data(), 0, nullptr);
  if (ok) {
    out.resize(size);
    ok = png_image_write_to_memory(&desc, out.data(), &size, 0, image.pixels.data(), 0, nullptr);
    out.resize(size);
  }
  const std::string message = desc.message;
  png_image_free(&desc);
  MOH_CHECK(ok, "encode_png: ", message);
  return out;
}

}  // namespace moh
