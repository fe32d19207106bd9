// Fashion-MNIST loader on read_idx: finds the split's two files under the standard names (raw or
// .gz), and checks their shapes, counts and label range before returning them.
#include "data/fashion_mnist.h"

#include <cstdlib>
#include <filesystem>

#include "data/idx.h"

namespace moh {
namespace {

constexpr int64_t kSide = 28;

// root/name or root/name.gz, whichever exists first; the error lists both names.
std::string find_file(const std::string& root, const std::string& name, const std::string& what) {
  const std::string tried[] = {name, name + ".gz"};
  for (const std::string& n : tried) {
    const std::filesystem::path p = std::filesystem::path(root) / n;
    if (std::filesystem::exists(p)) return p.string();
  }
  MOH_FAIL("load_fashion_mnist: no ", what, " file in '", root, "': tried ", tried[0], " and ", tried[1],
           " (install the Debian package dataset-fashion-mnist, or set MOH_FASHION_MNIST to the folder "
           "holding the files)");
}

}  // namespace

std::string default_fashion_mnist_root() {
  const char* env = std::getenv("MOH_FASHION_MNIST");
  return env && *env ? std::string(env) : std::string("/usr/share/datasets/fashion-mnist");
}

const std::vector<std::string>& fashion_mnist_class_names() {
  static const std::vector<std::string> names = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                                 "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};
  return names;
}

ImageDataset load_fashion_mnist(const std::string& root, const std::string& split) {
  MOH_CHECK(split == "train" || split == "test", "load_fashion_mnist: unknown split '", split,
            "' (expected \"train\" or \"test\")");
  const std::string prefix = split == "train" ? "train" : "t10k";
  const std::string image_path = find_file(root, prefix + "-images-idx3-ubyte", split + " images");
  const std::string label_path = find_file(root, prefix + "-labels-idx1-ubyte", split + " labels");
  Tensor images = read_idx(image_path);
  Tensor labels = read_idx(label_path);
  MOH_CHECK(images.dtype() == DType::UInt8 && images.dim() == 3 && images.size(1) == kSide &&
                images.size(2) == kSide,
            "load_fashion_mnist: '", image_path, "' holds ", describe(images), ", expected uint8[N, 28, 28]");
  MOH_CHECK(labels.dtype() == DType::UInt8 && labels.dim() == 1, "load_fashion_mnist: '", label_path,
            "' holds ", describe(labels), ", expected uint8[N]");
  MOH_CHECK(images.size(0) == labels.size(0), "load_fashion_mnist: '", image_path, "' has ", images.size(0),
            " images but '", label_path, "' has ", labels.size(0), " labels");
  const auto& names = fashion_mnist_class_names();
  const uint8_t* l = labels.data<uint8_t>();
  for (int64_t i = 0; i < labels.numel(); ++i)
    MOH_CHECK(l[i] < names.size(), "load_fashion_mnist: '", label_path, "': label ", i, " is ", int(l[i]),
              ", expected 0..", names.size() - 1);
  return {std::move(images), labels.to(DType::Int64), names};
}

}  // namespace moh
