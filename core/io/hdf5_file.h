// Hdf5File: a small RAII handle on an HDF5 file (C API) for tensors and scalar metadata.
// Object paths are "a/b/c" or "/a/b/c" (always from the root); writing a dataset or attribute creates
// missing parent groups. Datasets are contiguous little-endian arrays: float32/64 and int32/64 as the
// IEEE/integer types, uint8 as unsigned 8-bit, float16 as the IEEE half type (NumPy float16 in h5py),
// bool as h5py's enum {FALSE, TRUE} over int8 (NumPy bool), bfloat16 as uint16 with a string attribute
// dtype = "bfloat16". Every failure throws moh::Error naming the file and object path and carrying
// HDF5's own message; HDF5's printed error stack is silenced. Not copyable; movable.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace moh {

class Hdf5File {
 public:
  enum class Mode {
    Read,       // existing file, read only
    ReadWrite,  // existing file
    Create,     // new file, truncating one that exists
  };

  Hdf5File(const std::string& path, Mode mode);
  ~Hdf5File();  // closes (errors on close are swallowed here; call close() to see them)
  Hdf5File(Hdf5File&& other) noexcept;
  Hdf5File& operator=(Hdf5File&& other) noexcept;
  Hdf5File(const Hdf5File&) = delete;
  Hdf5File& operator=(const Hdf5File&) = delete;

  const std::string& path() const { return path_; }
  bool is_open() const { return file_ >= 0; }
  // Flushes everything to the OS and releases the file; later calls throw. Idempotent.
  void close();

  // ---- Groups and listing ----
  bool exists(const std::string& object) const;  // a group or dataset at that path
  bool is_group(const std::string& object) const;
  void create_group(const std::string& group);  // and its parents; no-op when present
  // Names of the datasets under `group`, sorted. Recursive: paths relative to group ("a/b").
  std::vector<std::string> datasets(const std::string& group, bool recursive = false) const;
  std::vector<std::string> groups(const std::string& group) const;  // direct child groups, sorted

  // ---- Datasets ----
  // Writes a new dataset holding t (any layout, any device; stored contiguous). Throws if one exists.
  void write_tensor(const std::string& dataset, const Tensor& t);
  // Reads a whole dataset into a new contiguous CPU tensor. Integer types narrower than 32 bits
  // (other than uint8) widen to int32, uint32 to int64; other types (uint64, compound, ...) throw.
  Tensor read_tensor(const std::string& dataset) const;
  Shape dataset_shape(const std::string& dataset) const;
  // Row-wise I/O for datasets too large to hold in memory (rows = slices along dimension 0).
  // create_dataset makes a dataset of `shape` (rank >= 1) whose rows are written later; write_rows writes
  // t's rows (t.shape() = [k] + shape[1:], t.dtype() the dataset's) at rows [first_row, first_row + k);
  // read_rows reads rows [first_row, first_row + count). Ranges outside the dataset throw.
  void create_dataset(const std::string& dataset, DType dtype, const Shape& shape);
  void write_rows(const std::string& dataset, int64_t first_row, const Tensor& t);
  Tensor read_rows(const std::string& dataset, int64_t first_row, int64_t count) const;
  DType dataset_dtype(const std::string& dataset) const;  // the dtype read_tensor returns

  // ---- Attributes on a group or dataset ("/" is the root); set_* replaces an existing one ----
  bool has_attr(const std::string& object, const std::string& name) const;
  std::vector<std::string> attr_names(const std::string& object) const;  // sorted
  void set_attr_int(const std::string& object, const std::string& name, int64_t value);
  void set_attr_uint(const std::string& object, const std::string& name, uint64_t value);
  void set_attr_double(const std::string& object, const std::string& name, double value);
  void set_attr_string(const std::string& object, const std::string& name, const std::string& value);
  // Readers check the stored type class (integer, float, string) and that the value fits.
  int64_t attr_int(const std::string& object, const std::string& name) const;
  uint64_t attr_uint(const std::string& object, const std::string& name) const;
  double attr_double(const std::string& object, const std::string& name) const;
  std::string attr_string(const std::string& object, const std::string& name) const;

 private:
  int64_t file_ = -1;  // hid_t of the open file, -1 when closed
  std::string path_;
  bool writable_ = false;
};

}  // namespace moh
