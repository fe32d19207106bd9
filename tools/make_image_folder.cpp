// moh_make_image_folder: writes Fashion-MNIST (data/fashion_mnist.h) as an ImageNet-style folder,
// OUT/{train,val}/<class>/<index>.{jpg,png} (val from the test split), grey 28x28 files; class folder
// names are the class names with characters outside [A-Za-z0-9._-] replaced by '_' ("T-shirt_top").
// Every class folder is created even when --limit leaves it empty. Exit codes: 0 ok, 2 usage, 1 error.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <stdexcept>
#include <string>

#include "data/fashion_mnist.h"
#include "data/image_decode.h"

namespace moh {
namespace {

namespace fs = std::filesystem;

constexpr const char* kUsage =
    "usage: moh_make_image_folder --out DIR [--format jpeg|png|mixed] [--limit N] [--quality Q] [--source "
    "DIR]\n"
    "Writes Fashion-MNIST as DIR/train/<class>/<index>.<ext> and DIR/val/<class>/<index>.<ext> (val = test "
    "split).\n"
    "  --out DIR       destination; DIR/train and DIR/val must not exist or be empty\n"
    "  --format F      jpeg (default), png, or mixed (even indices jpeg, odd png)\n"
    "  --limit N       write only the first N images of each split (0 = all, the default)\n"
    "  --quality Q     JPEG quality 1..100 (default 90)\n"
    "  --source DIR    Fashion-MNIST IDX folder (default $MOH_FASHION_MNIST or "
    "/usr/share/datasets/fashion-mnist)\n";

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Args {
  std::string out, format = "jpeg", source = default_fashion_mnist_root();
  int64_t limit = 0;
  int quality = 90;
  bool help = false;
};

int64_t parse_int(const std::string& flag, const std::string& text) {
  size_t used = 0;
  int64_t v = 0;
  try {
    v = std::stoll(text, &used);
  } catch (const std::exception&) { used = 0; }
  if (used != text.size() || text.empty()) throw UsageError(flag + " needs an integer, got '" + text + "'");
  return v;
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw UsageError(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--help" || arg == "-h")
      a.help = true;
    else if (arg == "--out")
      a.out = value();
    else if (arg == "--format")
      a.format = value();
    else if (arg == "--source")
      a.source = value();
    else if (arg == "--limit")
      a.limit = parse_int(arg, value());
    else if (arg == "--quality")
      a.quality = int(parse_int(arg, value()));
    else
      throw UsageError("unknown argument '" + arg + "'");
  }
  if (a.help) return a;
  if (a.out.empty()) throw UsageError("--out is required");
  if (a.format != "jpeg" && a.format != "png" && a.format != "mixed")
    throw UsageError("--format must be jpeg, png or mixed, got '" + a.format + "'");
  if (a.limit < 0) throw UsageError("--limit must be >= 0");
  if (a.quality < 1 || a.quality > 100) throw UsageError("--quality must be in 1..100");
  return a;
}

std::string folder_name(const std::string& class_name) {
  std::string s = class_name;
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') c = '_';
  return s;
}

// Writes the first `limit` (0: all) images of `data` under dir/<class>/; returns how many.
int64_t write_split(const ImageDataset& data, const fs::path& dir, const Args& a) {
  for (const auto& name : data.class_names) fs::create_directories(dir / folder_name(name));
  const int64_t n = data.images.size(0), count = a.limit ? std::min(a.limit, n) : n;
  const int64_t side = data.images.size(1);
  const int digits = int(std::to_string(n - 1).size());
  const uint8_t* pixels = data.images.data<uint8_t>();
  const int64_t* labels = data.labels.data<int64_t>();
  Image img;
  img.height = img.width = side;
  img.channels = 1;
  for (int64_t i = 0; i < count; ++i) {
    img.pixels.assign(pixels + i * side * side, pixels + (i + 1) * side * side);
    const bool png = a.format == "png" || (a.format == "mixed" && i % 2 == 1);
    char name[32];
    std::snprintf(name, sizeof name, "%0*lld.%s", digits, static_cast<long long>(i), png ? "png" : "jpg");
    const fs::path file = dir / folder_name(data.class_names[size_t(labels[i])]) / name;
    write_file_bytes(file.string(), png ? encode_png(img) : encode_jpeg(img, a.quality));
  }
  return count;
}

int run(int argc, char** argv) {
  Args a;
  try {
    a = parse(argc, argv);
  } catch (const UsageError& e) {
    std::cerr << "moh_make_image_folder: " << e.what() << "\n" << kUsage;
    return 2;
  }
  if (a.help) {
    std::cout << kUsage;
    return 0;
  }
  try {
    const fs::path out(a.out);
    for (const char* split : {"train", "val"})
      MOH_CHECK(!fs::exists(out / split) || fs::is_empty(out / split), "'", (out / split).string(),
                "' already exists and is not empty (remove it or choose another --out)");
    const int64_t train = write_split(load_fashion_mnist(a.source, "train"), out / "train", a);
    const int64_t val = write_split(load_fashion_mnist(a.source, "test"), out / "val", a);
    std::cout << "moh_make_image_folder: wrote " << train << " train and " << val << " val images ("
              << a.format << ") to " << out.string() << "\n";
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "moh_make_image_folder: error: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace
}  // namespace moh

int main(int argc, char** argv) { return moh::run(argc, argv); }
