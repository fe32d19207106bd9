// Storage: one reference-counted block of device memory. Tensors share a Storage through
// std::shared_ptr; views alias it. The block is returned to its allocator when the last
// reference goes. Never copied.
#pragma once

#include <cstddef>
#include <memory>

#include "core/allocator.h"

namespace moh {

class Storage {
 public:
  Storage(size_t nbytes, Device device);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return allocator_->device(); }

 private:
  void* data_ = nullptr;
  size_t nbytes_ = 0;
  Allocator* allocator_ = nullptr;
};

}  // namespace moh
