// Storage: allocation and release through the device's allocator.
#include "core/storage.h"

namespace moh {

Storage::Storage(size_t nbytes, Device device)
    : nbytes_(nbytes), allocator_(&allocator_for(device)) {
  data_ = allocator_->allocate(nbytes);
}

Storage::~Storage() { allocator_->deallocate(data_, nbytes_); }

}  // namespace moh
