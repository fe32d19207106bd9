// moh_bench_image_loader: throughput (images/s) of ImageFolderLoader for several worker-thread counts,
// training mode (RandomResizedCrop + flip + normalise) by default, on a folder written by
// moh_make_image_folder (scripts/make_image_folder.sh) or, with --synthetic N, on N photo-sized JPEGs
// (smooth content plus noise, --photo WxH, default 500x375 like ImageNet) written under --root first.
// Usage: moh_bench_image_loader --root DIR [--split train] [--image-size 224] [--channels 3] [--batch 64]
//          [--batches 30] [--threads 1,2,4] [--eval] [--no-reduction] [--synthetic N] [--photo 500x375]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "data/image_decode.h"
#include "data/image_folder.h"

namespace moh {
namespace {

struct Args {
  std::string root, split = "train";
  int64_t image_size = 224, channels = 3, batch = 64, batches = 30, synthetic = 0, photo_w = 500,
          photo_h = 375;
  std::vector<int64_t> threads{1, 2, 4};
  bool eval = false, reduction = true;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      MOH_CHECK(i + 1 < argc, "moh_bench_image_loader: ", arg, " needs a value");
      return argv[++i];
    };
    if (arg == "--root")
      a.root = value();
    else if (arg == "--split")
      a.split = value();
    else if (arg == "--image-size")
      a.image_size = std::stoll(value());
    else if (arg == "--channels")
      a.channels = std::stoll(value());
    else if (arg == "--batch")
      a.batch = std::stoll(value());
    else if (arg == "--batches")
      a.batches = std::stoll(value());
    else if (arg == "--synthetic")
      a.synthetic = std::stoll(value());
    else if (arg == "--eval")
      a.eval = true;
    else if (arg == "--no-reduction")
      a.reduction = false;
    else if (arg == "--photo") {
      const std::string v = value();
      MOH_CHECK(std::sscanf(v.c_str(), "%ldx%ld", &a.photo_w, &a.photo_h) == 2, "--photo needs WxH, got ", v);
    } else if (arg == "--threads") {
      a.threads.clear();
      std::stringstream ss(value());
      for (std::string part; std::getline(ss, part, ',');) a.threads.push_back(std::stoll(part));
    } else {
      MOH_FAIL("moh_bench_image_loader: unknown argument '", arg, "' (see the usage at the top of main.cpp)");
    }
  }
  MOH_CHECK(!a.root.empty(), "moh_bench_image_loader: --root is required");
  return a;
}

// N JPEG photos in 10 classes under root/train (and one per class under root/val).
void write_synthetic(const Args& a) {
  namespace fs = std::filesystem;
  MOH_CHECK(!fs::exists(fs::path(a.root) / "train"),
            "moh_bench_image_loader: --synthetic needs a fresh --root, '", a.root, "/train' exists");
  std::mt19937 rng(1);
  for (int64_t i = 0; i < a.synthetic + 10; ++i) {
    const bool val = i >= a.synthetic;
    const fs::path dir = fs::path(a.root) / (val ? "val" : "train") / ("class" + std::to_string(i % 10));
    fs::create_directories(dir);
    Image img;
    img.height = a.photo_h;
    img.width = a.photo_w;
    img.channels = 3;
    img.pixels.resize(size_t(img.height * img.width * 3));
    const double fx = 0.01 + 0.002 * double(i % 7), fy = 0.013 + 0.002 * double(i % 5);
    for (int64_t y = 0; y < img.height; ++y)
      for (int64_t x = 0; x < img.width; ++x)
        for (int64_t k = 0; k < 3; ++k)
          img.pixels[size_t((y * img.width + x) * 3 + k)] =
              uint8_t(std::clamp(128 + 70 * std::sin(fx * double(x) + double(k)) * std::cos(fy * double(y)) +
                                     double(rng() % 40) - 20,
                                 0.0, 255.0));
    write_file_bytes((dir / (std::to_string(i) + ".JPEG")).string(), encode_jpeg(img, 90));
  }
}

int run(int argc, char** argv) {
  const Args a = parse(argc, argv);
  if (a.synthetic > 0) write_synthetic(a);
  std::printf(
      "moh_bench_image_loader: %s '%s/%s', %s mode, %ldx%ld x%ld, batch %ld, %ld timed batches, JPEG "
      "reduction %s\n",
      a.synthetic ? "synthetic photos in" : "folder", a.root.c_str(), a.split.c_str(),
      a.eval ? "eval" : "train", a.image_size, a.image_size, a.channels, a.batch, a.batches,
      a.reduction ? "on" : "off");
  // The first configuration also runs once untimed: a fresh process page-faults the memory of its first
  // batches in (about 1 s per 200 MB on some VMs); the heap keeps it for the later runs.
  std::vector<int64_t> runs = a.threads;
  runs.insert(runs.begin(), a.threads.front());
  for (size_t r = 0; r < runs.size(); ++r) {
    const int64_t threads = runs[r];
    ImageFolderOptions o;
    o.root = a.root;
    o.split = a.split;
    o.train = !a.eval;
    o.batch_size = a.batch;
    o.image_size = a.image_size;
    o.channels = a.channels;
    if (a.channels == 1) o.mean = o.std_dev = {0.5f};
    o.threads = threads;
    o.jpeg_reduction = a.reduction;
    ImageFolderLoader loader(o);
    for (int64_t i = 0; i < (r == 0 ? 16 : 2 * o.prefetch + 2); ++i)  // warm up: the queue is full
      if (!loader.next()) loader.restart();
    const auto start = std::chrono::steady_clock::now();
    int64_t images = 0;
    for (int64_t i = 0; i < a.batches; ++i) {
      auto b = loader.next();
      if (!b) {
        loader.restart();
        b = loader.next();
      }
      images += b->images.size(0);
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (r == 0) continue;
    std::printf("  threads %2ld: %9.0f images/s  (%ld images of %ld in the split, %.2f s)\n", threads,
                double(images) / seconds, images, loader.size(), seconds);
  }
  return 0;
}

}  // namespace
}  // namespace moh

int main(int argc, char** argv) {
  try {
    return moh::run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "moh_bench_image_loader: error: %s\n", e.what());
    return 1;
  }
}
