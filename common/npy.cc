// .npy reader/writer.
#include "common/npy.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace gemm {
namespace {

// Extracts the value text of `key` in the header dict, e.g. "'<f4'" or "(3, 4)".
absl::StatusOr<std::string> HeaderValue(const std::string& header, const std::string& key) {
  const std::string needle = absl::StrCat("'", key, "':");
  const size_t pos = header.find(needle);
  if (pos == std::string::npos)
    return absl::InvalidArgumentError(absl::StrCat("npy header lacks ", key));
  size_t start = pos + needle.size();
  while (start < header.size() && header[start] == ' ') ++start;
  size_t end = start;
  if (header[start] == '(') {
    end = header.find(')', start);
    if (end == std::string::npos) return absl::InvalidArgumentError("npy header: bad shape");
    ++end;
  } else {
    end = header.find_first_of(",}", start);
  }
  return header.substr(start, end - start);
}

}  // namespace

absl::StatusOr<NpyHeader> ReadNpyHeader(std::istream& in, int64_t file_bytes,
                                        const std::string& path) {
  // NOTE: every length the file declares is checked against its real size before anything is
  // allocated, so a short file cannot ask for gigabytes.
  char magic[8];
  in.read(magic, 8);
  if (!in || std::memcmp(magic, "\x93NUMPY", 6) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a .npy file"));
  }
  const int version = static_cast<unsigned char>(magic[6]);
  if (version < 1 || version > 3) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": .npy format version ", version, " not supported (1 to 3)"));
  }
  const int length_bytes = version == 1 ? 2 : 4;
  unsigned char b[4] = {0, 0, 0, 0};
  in.read(reinterpret_cast<char*>(b), length_bytes);
  const int64_t header_len = b[0] | (b[1] << 8) | (b[2] << 16) | (static_cast<int64_t>(b[3]) << 24);
  NpyHeader out;
  out.data_offset = 8 + length_bytes + header_len;
  if (!in || out.data_offset > file_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": truncated header"));
  }
  std::string header(header_len, '\0');
  in.read(header.data(), header_len);
  if (!in) return absl::InvalidArgumentError(absl::StrCat(path, ": truncated header"));
  auto descr = HeaderValue(header, "descr");
  auto fortran = HeaderValue(header, "fortran_order");
  auto shape_text = HeaderValue(header, "shape");
  if (!descr.ok()) return descr.status();
  if (!fortran.ok()) return fortran.status();
  if (!shape_text.ok()) return shape_text.status();
  out.descr = std::string(absl::StripSuffix(absl::StripPrefix(*descr, "'"), "'"));
  out.fortran_order = *fortran != "False";
  std::string dims(absl::StripSuffix(absl::StripPrefix(*shape_text, "("), ")"));
  for (absl::string_view part : absl::StrSplit(dims, ',', absl::SkipWhitespace())) {
    int64_t d;
    if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(part), &d) || d < 0) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": bad shape ", *shape_text));
    }
    out.shape.push_back(d);
  }
  return out;
}

absl::StatusOr<NpyArray> ReadNpy(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  const int64_t file_bytes = static_cast<int64_t>(in.tellg());
  in.seekg(0);
  absl::StatusOr<NpyHeader> header = ReadNpyHeader(in, file_bytes, path);
  if (!header.ok()) return header.status();
  if (header->fortran_order)
    return absl::InvalidArgumentError(absl::StrCat(path, ": Fortran order not supported"));
  int elem = 0;
  if (header->descr == "<f4")
    elem = 4;
  else if (header->descr == "<f8")
    elem = 8;
  else
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": dtype '", header->descr, "' not supported (float32/float64 only)"));
  NpyArray arr;
  arr.shape = header->shape;
  const std::string shape_text = absl::StrCat("(", absl::StrJoin(arr.shape, ", "), ")");
  const int64_t data_offset = header->data_offset;
  // The data bytes the file holds bound the element count, so the product cannot overflow.
  const int64_t data_bytes = file_bytes - data_offset;
  const bool empty = std::find(arr.shape.begin(), arr.shape.end(), 0) != arr.shape.end();
  int64_t count = empty ? 0 : 1;
  for (int64_t d : arr.shape) {
    if (empty) break;
    if (count > data_bytes / elem / d) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": shape ", shape_text,
                                                     " needs more than the ", data_bytes,
                                                     " data bytes the file has"));
    }
    count *= d;
  }
  arr.data.resize(count);
  if (elem == 4) {
    in.read(reinterpret_cast<char*>(arr.data.data()), count * 4);
  } else {
    std::vector<double> tmp(count);
    in.read(reinterpret_cast<char*>(tmp.data()), count * 8);
    for (int64_t i = 0; i < count; ++i) arr.data[i] = static_cast<float>(tmp[i]);
  }
  if (!in) return absl::InvalidArgumentError(absl::StrCat(path, ": truncated data"));
  return arr;
}

absl::Status WriteNpy(const std::string& path, const std::vector<int64_t>& shape,
                      const std::vector<float>& data) {
  std::string dims = absl::StrJoin(shape, ", ");
  if (shape.size() == 1) dims += ",";
  std::string header =
      absl::StrCat("{'descr': '<f4', 'fortran_order': False, 'shape': (", dims, "), }");
  // Version 1.0 has a 2-byte header length; a longer header (many dimensions) needs 2.0's 4.
  const int length_bytes = 10 + header.size() + 1 + 63 <= 0xffff ? 2 : 4;
  const size_t unpadded = 8 + length_bytes + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header.push_back('\n');
  std::ofstream out(path, std::ios::binary);
  if (!out) return absl::PermissionDeniedError(absl::StrCat("cannot write ", path));
  out.write(length_bytes == 2 ? "\x93NUMPY\x01\x00" : "\x93NUMPY\x02\x00", 8);
  const uint32_t len = static_cast<uint32_t>(header.size());
  const char lb[4] = {static_cast<char>(len & 0xff), static_cast<char>((len >> 8) & 0xff),
                      static_cast<char>((len >> 16) & 0xff), static_cast<char>(len >> 24)};
  out.write(lb, length_bytes);
  out.write(header.data(), header.size());
  out.write(reinterpret_cast<const char*>(data.data()), data.size() * 4);
  if (!out) return absl::InternalError(absl::StrCat("write failed: ", path));
  return absl::OkStatus();
}

}  // namespace gemm
