// SPDX-License-Identifier: Apache-2.0
#include "common/npy.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string_view>

#include "common/error.h"
#include "common/file_util.h"

namespace of {
namespace {

constexpr char kMagic[] = "\x93NUMPY";

struct DescrEntry {
  std::string_view descr;
  DType dtype;
};
constexpr DescrEntry kDescrs[] = {{"<f4", DType::f32}, {"<f2", DType::f16}, {"<i4", DType::i32},
                                  {"<i8", DType::i64}, {"|u1", DType::u8},  {"|i1", DType::i8},
                                  {"|b1", DType::bool_}};

// Value of `'key': ` in the header dict, up to the next top-level ',' or '}' (tuples kept whole).
std::string_view dict_value(std::string_view header, std::string_view key, const std::string& path) {
  std::string quoted = "'" + std::string(key) + "'";
  size_t k = header.find(quoted);
  if (k == std::string_view::npos) fail({.file = path}, "npy header has no '{}'", key);
  size_t colon = header.find(':', k + quoted.size());
  if (colon == std::string_view::npos) fail({.file = path}, "npy header is malformed near '{}'", key);
  size_t b = colon + 1;
  while (b < header.size() && header[b] == ' ') ++b;
  size_t e = b;
  int depth = 0;
  while (e < header.size()) {
    char c = header[e];
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (depth == 0 && (c == ',' || c == '}')) break;
    ++e;
  }
  if (depth != 0) fail({.file = path}, "npy header is malformed near '{}'", key);
  return header.substr(b, e - b);
}

Shape parse_shape(std::string_view v, const std::string& path) {
  if (v.size() < 2 || v.front() != '(' || v.back() != ')') fail({.file = path}, "npy shape '{}' is not a tuple", v);
  Shape shape;
  std::string_view body = v.substr(1, v.size() - 2);
  size_t i = 0;
  while (i < body.size()) {
    while (i < body.size() && (body[i] == ' ' || body[i] == ',')) ++i;
    if (i >= body.size()) break;
    int64_t d = 0;
    size_t start = i;
    while (i < body.size() && body[i] >= '0' && body[i] <= '9') {
      if (d > (std::numeric_limits<int64_t>::max() - 9) / 10) fail({.file = path}, "npy shape '{}' overflows", v);
      d = d * 10 + (body[i] - '0');
      ++i;
    }
    if (i == start || (i < body.size() && body[i] != ',' && body[i] != ' '))
      fail({.file = path}, "npy shape '{}' has a bad dimension", v);
    shape.push_back(d);
  }
  if (shape.size() > 16) fail({.file = path}, "npy shape '{}' has more than 16 dimensions", v);
  return shape;
}

// A checked header: the array without its data, and where the data starts.
struct NpyHeader {
  NpyArray array;
  size_t data_start = 0;
};

NpyHeader parse_header(const uint8_t* bytes, size_t size, const std::string& path, bool f64_as_f32) {
  if (size < 10 || std::memcmp(bytes, kMagic, 6) != 0) fail({.file = path}, "not a .npy file (bad magic)");
  uint8_t major = bytes[6];
  size_t header_len = 0, header_start = 0;
  if (major == 1) {
    header_len = bytes[8] | (size_t(bytes[9]) << 8);
    header_start = 10;
  } else if (major == 2 || major == 3) {
    if (size < 12) fail({.file = path}, "truncated .npy header");
    header_len = bytes[8] | (size_t(bytes[9]) << 8) | (size_t(bytes[10]) << 16) | (size_t(bytes[11]) << 24);
    header_start = 12;
  } else {
    fail({.file = path}, "unsupported .npy format version {}", int(major));
  }
  if (header_len > size - header_start) fail({.file = path}, "truncated .npy header");
  std::string_view header(reinterpret_cast<const char*>(bytes + header_start), header_len);

  std::string_view descr = dict_value(header, "descr", path);
  if (descr.size() < 2) fail({.file = path}, "npy descr '{}' is malformed", descr);
  descr = descr.substr(1, descr.size() - 2);  // strip quotes
  NpyHeader h;
  NpyArray& arr = h.array;
  bool known = false;
  for (const DescrEntry& e : kDescrs) {
    if (e.descr == descr) {
      arr.dtype = e.dtype;
      known = true;
    }
  }
  if (!known && f64_as_f32 && descr == "<f8") {
    arr.dtype = DType::f32;
    arr.from_f64 = known = true;
  }
  if (!known) fail({.file = path}, "unsupported .npy dtype '{}' (supported: <f4 <f2 <i4 <i8 |u1 |i1 |b1)", descr);
  if (dict_value(header, "fortran_order", path) != "False")
    fail({.file = path}, "Fortran-order .npy arrays are not supported (save with C order)");
  arr.shape = parse_shape(dict_value(header, "shape", path), path);

  // Check the declared size against the bytes present before allocating anything.
  size_t data_start = header_start + header_len;
  size_t have = size - data_start;
  uint64_t want = arr.from_f64 ? 8 : uint64_t(dtype_size(arr.dtype));
  bool empty = std::find(arr.shape.begin(), arr.shape.end(), 0) != arr.shape.end();
  for (int64_t d : arr.shape) {
    if (empty) {
      want = 0;
      break;
    }
    if (want > have / uint64_t(d)) fail({.file = path}, "npy shape {} needs more bytes than the file holds ({})", shape_str(arr.shape), have);
    want *= uint64_t(d);
  }
  if (want != have)
    fail({.file = path}, "npy shape {} ({}) needs {} data bytes, file holds {}", shape_str(arr.shape),
         arr.from_f64 ? "f64" : dtype_name(arr.dtype), want, have);
  h.data_start = data_start;
  return h;
}

// Converts the `count` float64 at `from` to float32 at `to`; `to` may be `from` or below it
// (each float is written at or before the double it comes from has been read).
void f64_to_f32(const uint8_t* from, uint8_t* to, size_t count, const std::string& path) {
  for (size_t i = 0; i < count; ++i) {
    double d;
    std::memcpy(&d, from + 8 * i, 8);
    const auto f = static_cast<float>(d);
    if (std::isfinite(d) && !std::isfinite(f))
      fail({.file = path}, "float64 value {} at flat index {} does not fit in float32", d, i);
    std::memcpy(to + 4 * i, &f, 4);
  }
}

}  // namespace

NpyArray parse_npy(const uint8_t* bytes, size_t size, const std::string& path, bool f64_as_f32) {
  NpyHeader h = parse_header(bytes, size, path, f64_as_f32);
  const size_t have = size - h.data_start;
  if (h.array.from_f64) {
    h.array.data.resize(have / 2);
    f64_to_f32(bytes + h.data_start, h.array.data.data(), have / 8, path);
  } else {
    h.array.data.assign(bytes + h.data_start, bytes + size);
  }
  return std::move(h.array);
}

NpyArray read_npy(const std::string& path, bool f64_as_f32) {
  // The array's data is the file's bytes, moved down over the header (or converted down in
  // place from float64), so a data set is never held twice while it loads.
  std::vector<uint8_t> bytes = read_file(path);
  NpyHeader h = parse_header(bytes.data(), bytes.size(), path, f64_as_f32);
  const size_t have = bytes.size() - h.data_start;
  if (h.array.from_f64) {
    f64_to_f32(bytes.data() + h.data_start, bytes.data(), have / 8, path);
    bytes.resize(have / 2);
  } else {
    bytes.erase(bytes.begin(), bytes.begin() + ptrdiff_t(h.data_start));
  }
  h.array.data = std::move(bytes);
  return std::move(h.array);
}

void write_npy(const std::string& path, DType dtype, const Shape& shape, const void* data) {
  std::string_view descr;
  for (const DescrEntry& e : kDescrs)
    if (e.dtype == dtype) descr = e.descr;
  if (descr.empty()) fail({.file = path}, "cannot write dtype {} to .npy", dtype_name(dtype));
  std::string dims;
  for (int64_t d : shape) dims += std::to_string(d) + ",";
  if (shape.size() > 1) dims.pop_back();  // numpy writes "(3,)" for rank 1 and "(2, 3)" otherwise
  std::string header = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({}), }}", descr, dims);
  // Pad with spaces so that the data starts 64-byte aligned, ending with '\n' (format 1.0).
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::vector<uint8_t> out;
  size_t bytes = size_t(numel(shape) * dtype_size(dtype));
  out.reserve(10 + header.size() + bytes);
  out.insert(out.end(), kMagic, kMagic + 6);
  out.push_back(1);
  out.push_back(0);
  out.push_back(uint8_t(header.size() & 0xff));
  out.push_back(uint8_t(header.size() >> 8));
  out.insert(out.end(), header.begin(), header.end());
  const auto* p = static_cast<const uint8_t*>(data);
  out.insert(out.end(), p, p + bytes);
  write_file_atomic(path, out);
}

}  // namespace of
