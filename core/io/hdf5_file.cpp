// Hdf5File over the HDF5 C API. Every HDF5 handle lives in an Hid (closed on scope exit), every call
// that can fail goes through a check that turns HDF5's error stack into moh::Error, and automatic
// error printing is switched off once per thread (the library is thread-safe, its error state is
// per thread). Files are written with the 1.8/1.10 format bounds, whose metadata is checksummed, so
// any HDF5 >= 1.10 (and h5py) reads them. Little-endian hosts only.
#include "core/io/hdf5_file.h"

#include <hdf5.h>

#include <algorithm>
#include <bit>
#include <filesystem>
#include <limits>
#include <type_traits>
#include <utility>

namespace moh {
namespace {

static_assert(std::endian::native == std::endian::little, "Hdf5File assumes a little-endian host");
static_assert(std::is_same_v<hid_t, int64_t>, "Hdf5File stores hid_t as int64_t");

void silence_hdf5() {
  static thread_local const bool silenced = [] {
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    return true;
  }();
  (void)silenced;
}

// HDF5's error stack of this thread as one line, "outermost (innermost)", then cleared.
std::string hdf5_message() {
  std::vector<std::string> descs;
  H5Ewalk2(
      H5E_DEFAULT, H5E_WALK_DOWNWARD,
      [](unsigned, const H5E_error2_t* e, void* data) -> herr_t {
        if (e->desc && *e->desc) static_cast<std::vector<std::string>*>(data)->emplace_back(e->desc);
        return 0;
      },
      &descs);
  H5Eclear2(H5E_DEFAULT);
  if (descs.empty()) return "unknown HDF5 error";
  std::string msg = descs.front();
  if (descs.back() != descs.front()) msg += " (" + descs.back() + ")";
  std::replace(msg.begin(), msg.end(), '\n', ' ');
  return msg;
}

// An owned HDF5 identifier with its close function.
class Hid {
 public:
  Hid() = default;
  Hid(hid_t id, herr_t (*closer)(hid_t)) : id_(id), closer_(closer) {}
  ~Hid() {
    if (id_ >= 0) closer_(id_);
  }
  Hid(Hid&& o) noexcept : id_(std::exchange(o.id_, -1)), closer_(o.closer_) {}
  Hid& operator=(Hid&& o) noexcept {
    std::swap(id_, o.id_);
    std::swap(closer_, o.closer_);
    return *this;
  }
  hid_t get() const { return id_; }

 private:
  hid_t id_ = -1;
  herr_t (*closer_)(hid_t) = nullptr;
};

// Normalises "a/b", "/a/b/" to "/a/b" and "", "/" to "/"; rejects empty, "." and ".." components.
std::string normalize(const std::string& path, const std::string& where) {
  const size_t begin = path.find_first_not_of('/');
  const size_t end = path.find_last_not_of('/');
  if (begin == std::string::npos) return "/";
  std::string out;
  for (size_t at = begin; at <= end;) {
    size_t next = path.find('/', at);
    if (next == std::string::npos || next > end) next = end + 1;
    const std::string part = path.substr(at, next - at);
    MOH_CHECK(!part.empty() && part != "." && part != "..", where, ": invalid object path '", path,
              "' (empty, '.' or '..' component)");
    out += "/" + part;
    at = next + 1;
  }
  return out;
}

// The dtype <-> HDF5 type mapping. Returned types are owned copies.
Hid half_type() {
  Hid t(H5Tcopy(H5T_IEEE_F32LE), H5Tclose);
  H5Tset_fields(t.get(), 15, 10, 5, 0, 10);
  H5Tset_size(t.get(), 2);
  H5Tset_ebias(t.get(), 15);
  return t;
}

Hid bool_type() {
  Hid t(H5Tenum_create(H5T_NATIVE_INT8), H5Tclose);
  const int8_t no = 0, yes = 1;
  H5Tenum_insert(t.get(), "FALSE", &no);
  H5Tenum_insert(t.get(), "TRUE", &yes);
  return t;
}

Hid copy_type(hid_t t) { return Hid(H5Tcopy(t), H5Tclose); }

Hid storage_type(DType dtype) {
  switch (dtype) {
    case DType::Float32: return copy_type(H5T_IEEE_F32LE);
    case DType::Float64: return copy_type(H5T_IEEE_F64LE);
    case DType::BFloat16: return copy_type(H5T_STD_U16LE);
    case DType::Float16: return half_type();
    case DType::Int32: return copy_type(H5T_STD_I32LE);
    case DType::Int64: return copy_type(H5T_STD_I64LE);
    case DType::UInt8: return copy_type(H5T_STD_U8LE);
    case DType::Bool: return bool_type();
  }
  MOH_FAIL("Hdf5File: no HDF5 type for dtype ", dtype_name(dtype));
}

Hid string_type() {
  Hid t(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(t.get(), H5T_VARIABLE);
  H5Tset_cset(t.get(), H5T_CSET_UTF8);
  return t;
}

struct LinkList {
  bool want_groups;
  std::vector<std::string> names;
};

}  // namespace

// ---- file lifetime ----

Hdf5File::Hdf5File(const std::string& path, Mode mode) : path_(path), writable_(mode != Mode::Read) {
  silence_hdf5();
  const std::string where = "Hdf5File '" + path + "'";
  if (mode != Mode::Create) {
    std::error_code ec;
    MOH_CHECK(std::filesystem::is_regular_file(path, ec), where, ": no such file");
  }
  // File locking stays on where the filesystem supports it and is skipped where it does not (NFS,
  // Lustre), instead of failing the open.
  Hid fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
  MOH_CHECK(fapl.get() >= 0 && H5Pset_fclose_degree(fapl.get(), H5F_CLOSE_STRONG) >= 0 &&
                H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_V18, H5F_LIBVER_V110) >= 0 &&
                H5Pset_file_locking(fapl.get(), true, true) >= 0,
            where, ": cannot set up file access: ", hdf5_message());
  if (mode == Mode::Create) {
    file_ = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get());
    MOH_CHECK(file_ >= 0, where, ": cannot create: ", hdf5_message());
  } else {
    file_ = H5Fopen(path.c_str(), mode == Mode::Read ? H5F_ACC_RDONLY : H5F_ACC_RDWR, fapl.get());
    MOH_CHECK(file_ >= 0, where, ": cannot open as HDF5: ", hdf5_message());
  }
}

Hdf5File::~Hdf5File() {
  if (file_ >= 0) H5Fclose(file_);
}

Hdf5File::Hdf5File(Hdf5File&& other) noexcept
    : file_(std::exchange(other.file_, -1)), path_(std::move(other.path_)), writable_(other.writable_) {}

Hdf5File& Hdf5File::operator=(Hdf5File&& other) noexcept {
  std::swap(file_, other.file_);
  std::swap(path_, other.path_);
  std::swap(writable_, other.writable_);
  return *this;
}

void Hdf5File::close() {
  if (file_ < 0) return;
  silence_hdf5();
  const herr_t flushed = H5Fflush(file_, H5F_SCOPE_LOCAL);
  const herr_t closed = H5Fclose(file_);
  file_ = -1;
  MOH_CHECK(flushed >= 0 && closed >= 0, "Hdf5File '", path_, "': cannot flush and close: ", hdf5_message());
}

// ---- shared plumbing (member-free helpers that need the file id and a `where`) ----

namespace {

// A normalised object path and the prefix of its error messages ("Hdf5File 'f.h5': dataset '/a/b'").
struct Target {
  std::string path, where;
};

// Resolves `object` for one call: checks that the file is open (and writable when asked) and
// silences HDF5's error printing on this thread.
Target target(hid_t file, const std::string& file_path, const std::string& object, const char* kind,
              bool write = false, bool writable = false) {
  Target t;
  t.path = normalize(object, "Hdf5File '" + file_path + "'");
  t.where = "Hdf5File '" + file_path + "': " + kind + " '" + t.path + "'";
  MOH_CHECK(file >= 0, t.where, ": the file is closed");
  MOH_CHECK(!write || writable, t.where, ": the file is open read-only");
  silence_hdf5();
  return t;
}

// Whether every link along `path` (normalised) exists; errors from missing parents count as false.
bool link_exists(hid_t file, const std::string& path) {
  if (path == "/") return true;
  for (size_t at = path.find('/', 1);; at = path.find('/', at + 1)) {
    const std::string prefix = at == std::string::npos ? path : path.substr(0, at);
    if (H5Lexists(file, prefix.c_str(), H5P_DEFAULT) <= 0) {
      H5Eclear2(H5E_DEFAULT);
      return false;
    }
    if (at == std::string::npos) return true;
  }
}

H5I_type_t object_type(hid_t file, const std::string& path) {
  if (!link_exists(file, path)) return H5I_BADID;
  Hid obj(H5Oopen(file, path.c_str(), H5P_DEFAULT), H5Oclose);
  if (obj.get() < 0) {
    H5Eclear2(H5E_DEFAULT);
    return H5I_BADID;
  }
  return H5Iget_type(obj.get());
}

// Throws when a parent of `t` exists as a dataset (it could not hold `t`).
void check_parents(hid_t file, const Target& t) {
  for (size_t at = t.path.find('/', 1); at != std::string::npos; at = t.path.find('/', at + 1))
    MOH_CHECK(object_type(file, t.path.substr(0, at)) != H5I_DATASET, t.where, ": its parent '",
              t.path.substr(0, at), "' is a dataset, not a group");
}

Hid link_create_plist() {
  Hid lcpl(H5Pcreate(H5P_LINK_CREATE), H5Pclose);
  H5Pset_create_intermediate_group(lcpl.get(), 1);
  H5Pset_char_encoding(lcpl.get(), H5T_CSET_UTF8);
  return lcpl;
}

}  // namespace

// ---- groups and listing ----

bool Hdf5File::exists(const std::string& object) const {
  const H5I_type_t t = object_type(file_, target(file_, path_, object, "object").path);
  return t == H5I_GROUP || t == H5I_DATASET;
}

bool Hdf5File::is_group(const std::string& object) const {
  return object_type(file_, target(file_, path_, object, "object").path) == H5I_GROUP;
}

namespace {

// Creates group `t` and its missing parents unless it exists.
void make_group(hid_t file, const Target& t) {
  const H5I_type_t type = object_type(file, t.path);
  if (type == H5I_GROUP) return;
  MOH_CHECK(type == H5I_BADID, t.where, ": a dataset already has this name");
  check_parents(file, t);
  Hid lcpl = link_create_plist();
  Hid g(H5Gcreate2(file, t.path.c_str(), lcpl.get(), H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
  MOH_CHECK(g.get() >= 0, t.where, ": cannot create: ", hdf5_message());
}

}  // namespace

void Hdf5File::create_group(const std::string& group) {
  make_group(file_, target(file_, path_, group, "group", true, writable_));
}

namespace {

herr_t collect_link(hid_t group, const char* name, const H5L_info_t* info, void* data) {
  auto& list = *static_cast<LinkList*>(data);
  if (info->type != H5L_TYPE_HARD) return 0;
  Hid obj(H5Oopen(group, name, H5P_DEFAULT), H5Oclose);
  if (obj.get() < 0) return -1;
  const H5I_type_t t = H5Iget_type(obj.get());
  if ((list.want_groups && t == H5I_GROUP) || (!list.want_groups && t == H5I_DATASET))
    list.names.emplace_back(name);
  return 0;
}

std::vector<std::string> list_links(hid_t file, const Target& t, bool want_groups, bool recursive) {
  const std::string& where = t.where;
  MOH_CHECK(object_type(file, t.path) == H5I_GROUP, where, ": no such group");
  Hid g(H5Gopen2(file, t.path.c_str(), H5P_DEFAULT), H5Gclose);
  MOH_CHECK(g.get() >= 0, where, ": cannot open: ", hdf5_message());
  LinkList list{want_groups, {}};
  const herr_t rc = recursive ? H5Lvisit(g.get(), H5_INDEX_NAME, H5_ITER_INC, collect_link, &list)
                              : H5Literate(g.get(), H5_INDEX_NAME, H5_ITER_INC, nullptr, collect_link, &list);
  MOH_CHECK(rc >= 0, where, ": cannot list: ", hdf5_message());
  std::sort(list.names.begin(), list.names.end());
  return list.names;
}

}  // namespace

std::vector<std::string> Hdf5File::datasets(const std::string& group, bool recursive) const {
  return list_links(file_, target(file_, path_, group, "group"), false, recursive);
}

std::vector<std::string> Hdf5File::groups(const std::string& group) const {
  return list_links(file_, target(file_, path_, group, "group"), true, false);
}

// ---- datasets ----

namespace {

struct OpenDataset {
  Hid dset, type;
  std::string path, where;
};

OpenDataset open_dataset(hid_t file, const std::string& file_path, const std::string& dataset) {
  OpenDataset d;
  Target t = target(file, file_path, dataset, "dataset");
  d.path = std::move(t.path);
  d.where = std::move(t.where);
  MOH_CHECK(object_type(file, d.path) == H5I_DATASET, d.where, ": no such dataset");
  d.dset = Hid(H5Dopen2(file, d.path.c_str(), H5P_DEFAULT), H5Dclose);
  MOH_CHECK(d.dset.get() >= 0, d.where, ": cannot open: ", hdf5_message());
  d.type = Hid(H5Dget_type(d.dset.get()), H5Tclose);
  MOH_CHECK(d.type.get() >= 0, d.where, ": cannot read its type: ", hdf5_message());
  return d;
}

std::string read_string_attr(hid_t obj, const std::string& name, const std::string& where);

// The dtype a stored dataset reads as, and the memory type to read it with.
std::pair<DType, Hid> read_type(const OpenDataset& d) {
  const hid_t t = d.type.get();
  const H5T_class_t cls = H5Tget_class(t);
  const size_t size = H5Tget_size(t);
  std::string tag;
  if (H5Aexists(d.dset.get(), "dtype") > 0) tag = read_string_attr(d.dset.get(), "dtype", d.where);
  std::pair<DType, Hid> out{DType::Float32, Hid()};
  if (cls == H5T_FLOAT && (size == 2 || size == 4 || size == 8)) {
    out = size == 2 ? std::pair{DType::Float16, half_type()}
                    : std::pair{size == 4 ? DType::Float32 : DType::Float64,
                                copy_type(size == 4 ? H5T_NATIVE_FLOAT : H5T_NATIVE_DOUBLE)};
  } else if (cls == H5T_INTEGER && size <= 8) {
    const bool is_signed = H5Tget_sign(t) == H5T_SGN_2;
    if (!is_signed && size == 1)
      out = {DType::UInt8, copy_type(H5T_NATIVE_UINT8)};
    else if (!is_signed && size == 2 && tag == "bfloat16")
      out = {DType::BFloat16, copy_type(H5T_NATIVE_UINT16)};
    else if (size < 4 || (is_signed && size == 4))
      out = {DType::Int32, copy_type(H5T_NATIVE_INT32)};
    else if (is_signed || size == 4)
      out = {DType::Int64, copy_type(H5T_NATIVE_INT64)};
    else
      MOH_FAIL(d.where, ": unsigned 64-bit integers have no moh dtype");
  } else if (cls == H5T_ENUM && size == 1 && H5Tget_nmembers(t) == 2) {
    out = {DType::Bool, bool_type()};
  } else {
    MOH_FAIL(d.where, ": unsupported HDF5 type (class ", int(cls), ", ", size,
             " bytes); expected a float, integer or h5py bool dataset");
  }
  MOH_CHECK(tag.empty() || tag == dtype_name(out.first), d.where, ": its dtype attribute says '", tag,
            "' but the stored type reads as ", dtype_name(out.first));
  return out;
}

Shape read_shape(const OpenDataset& d) {
  Hid space(H5Dget_space(d.dset.get()), H5Sclose);
  MOH_CHECK(space.get() >= 0, d.where, ": cannot read its shape: ", hdf5_message());
  const H5S_class_t cls = H5Sget_simple_extent_type(space.get());
  if (cls == H5S_SCALAR) return {};
  MOH_CHECK(cls == H5S_SIMPLE, d.where, ": has an empty (null) dataspace");
  const int rank = H5Sget_simple_extent_ndims(space.get());
  std::vector<hsize_t> dims(size_t(std::max(rank, 0)));
  MOH_CHECK(rank >= 0 && H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr) == rank, d.where,
            ": cannot read its shape: ", hdf5_message());
  Shape shape;
  for (hsize_t v : dims) {
    MOH_CHECK(v <= hsize_t(std::numeric_limits<int64_t>::max()), d.where, ": dimension ", v, " is too large");
    shape.push_back(int64_t(v));
  }
  return shape;
}

void check_bool_bytes(const Tensor& t, const std::string& where) {
  if (t.dtype() != DType::Bool) return;
  const auto* b = static_cast<const uint8_t*>(t.raw_data());
  const auto* bad = std::find_if(b, b + t.numel(), [](uint8_t v) { return v > 1; });
  MOH_CHECK(bad == b + t.numel(), where, ": bool element ", bad - b, " has byte value ", int(*bad),
            " (expected 0 or 1)");
}

// Selects rows [first, first + count) of dataset d (shape `shape`) in its file space; returns that space.
Hid select_rows(const OpenDataset& d, const Shape& shape, int64_t first, int64_t count) {
  MOH_CHECK(!shape.empty(), d.where, ": is a scalar, it has no rows");
  MOH_CHECK(first >= 0 && count >= 0 && first <= shape[0] && count <= shape[0] - first, d.where, ": rows [", first,
            ", ", first + count, ") are outside its ", shape[0], " rows");
  Hid space(H5Dget_space(d.dset.get()), H5Sclose);
  std::vector<hsize_t> start(shape.size(), 0), extent(shape.begin(), shape.end());
  start[0] = hsize_t(first);
  extent[0] = hsize_t(count);
  MOH_CHECK(space.get() >= 0 && H5Sselect_hyperslab(space.get(), H5S_SELECT_SET, start.data(), nullptr,
                                                    extent.data(), nullptr) >= 0,
            d.where, ": cannot select rows [", first, ", ", first + count, "): ", hdf5_message());
  return space;
}

Hid memory_space(const Shape& shape) {
  std::vector<hsize_t> dims(shape.begin(), shape.end());
  return Hid(H5Screate_simple(int(dims.size()), dims.data(), nullptr), H5Sclose);
}

}  // namespace

void Hdf5File::create_dataset(const std::string& dataset, DType dtype, const Shape& shape) {
  const auto [p, where] = target(file_, path_, dataset, "dataset", true, writable_);
  MOH_CHECK(p != "/", where, ": the root is a group, not a dataset");
  MOH_CHECK(!shape.empty(), where, ": row-wise datasets need rank >= 1, got a scalar shape");
  for (int64_t d : shape) MOH_CHECK(d >= 0, where, ": negative dimension in shape ", shape_str(shape));
  MOH_CHECK(object_type(file_, p) == H5I_BADID, where, ": already exists");
  check_parents(file_, {p, where});
  Hid space = memory_space(shape);
  Hid type = storage_type(dtype);
  Hid lcpl = link_create_plist();
  Hid dset(H5Dcreate2(file_, p.c_str(), type.get(), space.get(), lcpl.get(), H5P_DEFAULT, H5P_DEFAULT), H5Dclose);
  MOH_CHECK(space.get() >= 0 && dset.get() >= 0, where, ": cannot create ", dtype_name(dtype), " ",
            shape_str(shape), ": ", hdf5_message());
  if (dtype == DType::BFloat16) set_attr_string(p, "dtype", "bfloat16");
}

void Hdf5File::write_rows(const std::string& dataset, int64_t first_row, const Tensor& t) {
  const Target checked = target(file_, path_, dataset, "dataset", true, writable_);
  const OpenDataset d = open_dataset(file_, path_, checked.path);
  const Shape shape = read_shape(d);
  MOH_CHECK(!shape.empty(), d.where, ": is a scalar, it has no rows");
  MOH_CHECK(t.defined(), d.where, ": write_rows got an undefined tensor");
  const DType stored = read_type(d).first;
  MOH_CHECK(t.dtype() == stored, d.where, ": write_rows got ", dtype_name(t.dtype()), ", the dataset holds ",
            dtype_name(stored));
  MOH_CHECK(t.dim() == int64_t(shape.size()) && t.dim() >= 1 &&
                std::equal(shape.begin() + 1, shape.end(), t.shape().begin() + 1),
            d.where, ": write_rows got shape ", shape_str(t.shape()), ", expected [k] + ",
            shape_str(Shape(shape.begin() + 1, shape.end())), " (the dataset is ", shape_str(shape), ")");
  Hid file_space = select_rows(d, shape, first_row, t.size(0));
  if (t.numel() == 0) return;
  const Tensor c = t.to(Device::cpu()).contiguous();
  Hid mem = memory_space(c.shape());
  Hid type = storage_type(c.dtype());
  MOH_CHECK(H5Dwrite(d.dset.get(), type.get(), mem.get(), file_space.get(), H5P_DEFAULT, c.raw_data()) >= 0, d.where,
            ": cannot write rows [", first_row, ", ", first_row + t.size(0), "): ", hdf5_message());
}

Tensor Hdf5File::read_rows(const std::string& dataset, int64_t first_row, int64_t count) const {
  const OpenDataset d = open_dataset(file_, path_, dataset);
  Shape shape = read_shape(d);
  Hid file_space = select_rows(d, shape, first_row, count);
  auto [dtype, mem_type] = read_type(d);
  shape[0] = count;
  Tensor t = Tensor::empty(shape, dtype);
  if (t.numel() == 0) return t;
  Hid mem = memory_space(shape);
  MOH_CHECK(H5Dread(d.dset.get(), mem_type.get(), mem.get(), file_space.get(), H5P_DEFAULT, t.raw_data()) >= 0,
            d.where, ": cannot read rows [", first_row, ", ", first_row + count, "): ", hdf5_message());
  check_bool_bytes(t, d.where);
  return t;
}

void Hdf5File::write_tensor(const std::string& dataset, const Tensor& t) {
  const auto [p, where] = target(file_, path_, dataset, "dataset", true, writable_);
  MOH_CHECK(p != "/", where, ": the root is a group, not a dataset");
  MOH_CHECK(t.defined(), where, ": the tensor is undefined");
  MOH_CHECK(object_type(file_, p) == H5I_BADID, where, ": already exists");
  check_parents(file_, {p, where});
  const Tensor c = t.to(Device::cpu()).contiguous();
  std::vector<hsize_t> dims(c.shape().begin(), c.shape().end());
  Hid space(dims.empty() ? H5Screate(H5S_SCALAR) : H5Screate_simple(int(dims.size()), dims.data(), nullptr),
            H5Sclose);
  Hid type = storage_type(c.dtype());
  Hid lcpl = link_create_plist();
  MOH_CHECK(space.get() >= 0 && type.get() >= 0, where, ": cannot describe ", describe(c), ": ", hdf5_message());
  Hid dset(H5Dcreate2(file_, p.c_str(), type.get(), space.get(), lcpl.get(), H5P_DEFAULT, H5P_DEFAULT), H5Dclose);
  MOH_CHECK(dset.get() >= 0, where, ": cannot create: ", hdf5_message());
  if (c.numel() > 0)
    MOH_CHECK(H5Dwrite(dset.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, c.raw_data()) >= 0, where,
              ": cannot write ", describe(c), ": ", hdf5_message());
  if (c.dtype() == DType::BFloat16) set_attr_string(p, "dtype", "bfloat16");
}

Tensor Hdf5File::read_tensor(const std::string& dataset) const {
  const OpenDataset d = open_dataset(file_, path_, dataset);
  auto [dtype, mem] = read_type(d);
  Tensor t = Tensor::empty(read_shape(d), dtype);
  if (t.numel() == 0) return t;
  MOH_CHECK(H5Dread(d.dset.get(), mem.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, t.raw_data()) >= 0, d.where,
            ": cannot read ", describe(t), ": ", hdf5_message());
  check_bool_bytes(t, d.where);
  return t;
}

Shape Hdf5File::dataset_shape(const std::string& dataset) const {
  return read_shape(open_dataset(file_, path_, dataset));
}

DType Hdf5File::dataset_dtype(const std::string& dataset) const {
  return read_type(open_dataset(file_, path_, dataset)).first;
}

// ---- attributes ----

namespace {

Hid open_object(hid_t file, const std::string& path, const std::string& where) {
  const H5I_type_t t = object_type(file, path);
  MOH_CHECK(t == H5I_GROUP || t == H5I_DATASET, where, ": no such group or dataset");
  Hid obj(H5Oopen(file, path.c_str(), H5P_DEFAULT), H5Oclose);
  MOH_CHECK(obj.get() >= 0, where, ": cannot open: ", hdf5_message());
  return obj;
}

// Opens attribute `name` of obj, checking it holds one value of type class `cls`.
Hid open_attr(hid_t obj, const std::string& name, H5T_class_t cls, const char* expected, const std::string& where,
              Hid* type_out) {
  MOH_CHECK(H5Aexists(obj, name.c_str()) > 0, where, ": no attribute '", name, "'");
  Hid attr(H5Aopen(obj, name.c_str(), H5P_DEFAULT), H5Aclose);
  MOH_CHECK(attr.get() >= 0, where, ": cannot open attribute '", name, "': ", hdf5_message());
  Hid type(H5Aget_type(attr.get()), H5Tclose);
  Hid space(H5Aget_space(attr.get()), H5Sclose);
  MOH_CHECK(type.get() >= 0 && space.get() >= 0, where, ": cannot read attribute '", name, "': ", hdf5_message());
  MOH_CHECK(H5Tget_class(type.get()) == cls, where, ": attribute '", name, "' is not ", expected);
  MOH_CHECK(H5Sget_simple_extent_npoints(space.get()) == 1, where, ": attribute '", name, "' holds ",
            H5Sget_simple_extent_npoints(space.get()), " values, expected one");
  *type_out = std::move(type);
  return attr;
}

std::string read_string_attr(hid_t obj, const std::string& name, const std::string& where) {
  Hid type;
  Hid attr = open_attr(obj, name, H5T_STRING, "a string", where, &type);
  if (H5Tis_variable_str(type.get()) > 0) {
    Hid mem = string_type();
    char* value = nullptr;
    MOH_CHECK(H5Aread(attr.get(), mem.get(), &value) >= 0, where, ": cannot read attribute '", name,
              "': ", hdf5_message());
    std::string out = value ? value : "";
    H5free_memory(value);
    return out;
  }
  const size_t n = H5Tget_size(type.get());
  std::string out(n, '\0');
  MOH_CHECK(n == 0 || H5Aread(attr.get(), type.get(), out.data()) >= 0, where, ": cannot read attribute '", name,
            "': ", hdf5_message());
  out.resize(std::min(out.size(), out.find('\0')));
  return out;
}

// Replaces attribute `name` of `object` (created as a group when missing) with one value.
void write_attr(hid_t file, const std::string& file_path, bool writable, const std::string& object,
                const std::string& name, hid_t type, const void* value) {
  const Target t = target(file, file_path, object, "object", true, writable);
  const std::string& where = t.where;
  MOH_CHECK(!name.empty(), where, ": empty attribute name");
  if (object_type(file, t.path) == H5I_BADID) make_group(file, t);
  Hid obj = open_object(file, t.path, where);
  if (H5Aexists(obj.get(), name.c_str()) > 0)
    MOH_CHECK(H5Adelete(obj.get(), name.c_str()) >= 0, where, ": cannot replace attribute '", name,
              "': ", hdf5_message());
  Hid space(H5Screate(H5S_SCALAR), H5Sclose);
  Hid attr(H5Acreate2(obj.get(), name.c_str(), type, space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  MOH_CHECK(attr.get() >= 0 && H5Awrite(attr.get(), type, value) >= 0, where, ": cannot write attribute '", name,
            "': ", hdf5_message());
}

}  // namespace

bool Hdf5File::has_attr(const std::string& object, const std::string& name) const {
  const auto [p, where] = target(file_, path_, object, "object");
  Hid obj = open_object(file_, p, where);
  return H5Aexists(obj.get(), name.c_str()) > 0;
}

std::vector<std::string> Hdf5File::attr_names(const std::string& object) const {
  const auto [p, where] = target(file_, path_, object, "object");
  Hid obj = open_object(file_, p, where);
  std::vector<std::string> names;
  const herr_t rc = H5Aiterate2(
      obj.get(), H5_INDEX_NAME, H5_ITER_INC, nullptr,
      [](hid_t, const char* name, const H5A_info_t*, void* data) -> herr_t {
        static_cast<std::vector<std::string>*>(data)->emplace_back(name);
        return 0;
      },
      &names);
  MOH_CHECK(rc >= 0, where, ": cannot list attributes: ", hdf5_message());
  std::sort(names.begin(), names.end());
  return names;
}

void Hdf5File::set_attr_int(const std::string& object, const std::string& name, int64_t value) {
  write_attr(file_, path_, writable_, object, name, H5T_STD_I64LE, &value);
}

void Hdf5File::set_attr_uint(const std::string& object, const std::string& name, uint64_t value) {
  write_attr(file_, path_, writable_, object, name, H5T_STD_U64LE, &value);
}

void Hdf5File::set_attr_double(const std::string& object, const std::string& name, double value) {
  write_attr(file_, path_, writable_, object, name, H5T_IEEE_F64LE, &value);
}

void Hdf5File::set_attr_string(const std::string& object, const std::string& name, const std::string& value) {
  MOH_CHECK(value.find('\0') == std::string::npos, "Hdf5File '", path_, "': attribute '", name, "' of '", object,
            "': strings may not contain NUL characters");
  Hid type = string_type();
  const char* text = value.c_str();
  write_attr(file_, path_, writable_, object, name, type.get(), &text);
}

namespace {

// Reads an integer attribute as int64 or uint64 (T), checking that the stored value fits.
template <class T>
T read_integer_attr(hid_t file, const std::string& file_path, const std::string& object, const std::string& name) {
  const auto [p, where] = target(file, file_path, object, "object");
  Hid obj = open_object(file, p, where);
  Hid type;
  Hid attr = open_attr(obj.get(), name, H5T_INTEGER, "an integer", where, &type);
  const bool stored_signed = H5Tget_sign(type.get()) == H5T_SGN_2;
  int64_t s = 0;
  uint64_t u = 0;
  const herr_t rc =
      stored_signed ? H5Aread(attr.get(), H5T_NATIVE_INT64, &s) : H5Aread(attr.get(), H5T_NATIVE_UINT64, &u);
  MOH_CHECK(rc >= 0, where, ": cannot read attribute '", name, "': ", hdf5_message());
  if constexpr (std::is_signed_v<T>) {
    MOH_CHECK(stored_signed || u <= uint64_t(std::numeric_limits<int64_t>::max()), where, ": attribute '", name,
              "' = ", u, " does not fit int64");
    return stored_signed ? s : int64_t(u);
  } else {
    MOH_CHECK(!stored_signed || s >= 0, where, ": attribute '", name, "' = ", s,
              " is negative, expected unsigned");
    return stored_signed ? uint64_t(s) : u;
  }
}

}  // namespace

int64_t Hdf5File::attr_int(const std::string& object, const std::string& name) const {
  return read_integer_attr<int64_t>(file_, path_, object, name);
}

uint64_t Hdf5File::attr_uint(const std::string& object, const std::string& name) const {
  return read_integer_attr<uint64_t>(file_, path_, object, name);
}

double Hdf5File::attr_double(const std::string& object, const std::string& name) const {
  const auto [p, where] = target(file_, path_, object, "object");
  Hid obj = open_object(file_, p, where);
  Hid type;
  Hid attr = open_attr(obj.get(), name, H5T_FLOAT, "a float", where, &type);
  double value = 0;
  MOH_CHECK(H5Aread(attr.get(), H5T_NATIVE_DOUBLE, &value) >= 0, where, ": cannot read attribute '", name,
            "': ", hdf5_message());
  return value;
}

std::string Hdf5File::attr_string(const std::string& object, const std::string& name) const {
  const auto [p, where] = target(file_, path_, object, "object");
  Hid obj = open_object(file_, p, where);
  return read_string_attr(obj.get(), name, where);
}

}  // namespace moh
