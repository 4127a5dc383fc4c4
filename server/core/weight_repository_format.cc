// Weight file indexing (safetensors, .npy) and conversion to BF16.
#include "server/core/weight_repository_format.h"

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <optional>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/bf16.h"
#include "common/npy.h"
#include "server/core/checked_math.h"

namespace gemm::core {
namespace {

using google::protobuf::Value;

// Element sizes of the dtypes the safetensors format defines; the ones loaded map to WeightDType.
struct SafetensorsDType {
  const char* name;
  int64_t bytes;
  std::optional<WeightDType> loaded;
};
constexpr SafetensorsDType kSafetensorsDTypes[] = {
    {"BOOL", 1, std::nullopt},    {"U8", 1, std::nullopt},       {"I8", 1, std::nullopt},
    {"F8_E5M2", 1, std::nullopt}, {"F8_E4M3", 1, std::nullopt},  {"I16", 2, std::nullopt},
    {"U16", 2, std::nullopt},     {"F16", 2, WeightDType::kF16}, {"BF16", 2, WeightDType::kBF16},
    {"I32", 4, std::nullopt},     {"U32", 4, std::nullopt},      {"F32", 4, WeightDType::kF32},
    {"F64", 8, std::nullopt},     {"I64", 8, std::nullopt},      {"U64", 8, std::nullopt}};

const SafetensorsDType* FindDType(absl::string_view name) {
  for (const SafetensorsDType& d : kSafetensorsDTypes) {
    if (name == d.name) return &d;
  }
  return nullptr;
}

// A JSON number that is a whole number in [0, 2^53] (exact in a double), or nullopt.
std::optional<int64_t> WholeNumber(const Value& v) {
  if (v.kind_case() != Value::kNumberValue) return std::nullopt;
  const double d = v.number_value();
  if (!(d >= 0 && d <= 9007199254740992.0) || std::floor(d) != d) return std::nullopt;
  return static_cast<int64_t>(d);
}

// One entry of a safetensors header as written, before the 2-D and dtype choices.
struct RawEntry {
  std::string tensor;
  const SafetensorsDType* dtype = nullptr;  // null: a dtype the format does not define
  std::string dtype_name;
  std::vector<int64_t> shape;
  int64_t begin = 0, end = 0;  // in the data area
};

// Parses entry `tensor` of the header (of `file` for messages) into `out`.
absl::Status ParseEntry(const std::string& file, const std::string& tensor, const Value& v,
                        RawEntry* out) {
  const std::string where = absl::StrCat(file, ": tensor '", tensor, "': ");
  if (v.kind_case() != Value::kStructValue) {
    return absl::InvalidArgumentError(absl::StrCat(where, "is not a JSON object"));
  }
  const auto& fields = v.struct_value().fields();
  const auto dtype = fields.find("dtype");
  const auto shape = fields.find("shape");
  const auto offsets = fields.find("data_offsets");
  if (dtype == fields.end() || dtype->second.kind_case() != Value::kStringValue) {
    return absl::InvalidArgumentError(absl::StrCat(where, "dtype: missing or not a string"));
  }
  if (shape == fields.end() || shape->second.kind_case() != Value::kListValue) {
    return absl::InvalidArgumentError(absl::StrCat(where, "shape: missing or not a list"));
  }
  if (offsets == fields.end() || offsets->second.kind_case() != Value::kListValue ||
      offsets->second.list_value().values_size() != 2) {
    return absl::InvalidArgumentError(absl::StrCat(where, "data_offsets: not a list of two"));
  }
  out->tensor = tensor;
  out->dtype_name = dtype->second.string_value();
  out->dtype = FindDType(out->dtype_name);
  for (const Value& d : shape->second.list_value().values()) {
    const std::optional<int64_t> dim = WholeNumber(d);
    if (!dim) return absl::InvalidArgumentError(absl::StrCat(where, "shape: not whole numbers"));
    out->shape.push_back(*dim);
  }
  const std::optional<int64_t> begin = WholeNumber(offsets->second.list_value().values(0));
  const std::optional<int64_t> end = WholeNumber(offsets->second.list_value().values(1));
  if (!begin || !end || *begin > *end) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, "data_offsets: not two whole numbers [begin, end] with begin <= end"));
  }
  out->begin = *begin;
  out->end = *end;
  return absl::OkStatus();
}

// Checks an entry's extent against the data area and, when its dtype is known, its size against
// shape * element size.
absl::Status CheckExtent(const std::string& file, const RawEntry& e, int64_t data_bytes) {
  const std::string where = absl::StrCat(file, ": tensor '", e.tensor, "': ");
  if (e.end > data_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(where, "data_offsets [", e.begin, ", ", e.end,
                                                   "] run past the ", data_bytes,
                                                   " bytes of the data area"));
  }
  if (e.dtype == nullptr) return absl::OkStatus();
  std::optional<int64_t> bytes = e.dtype->bytes;
  for (int64_t d : e.shape) bytes = bytes ? CheckedMul(*bytes, d) : std::nullopt;
  if (!bytes || *bytes != e.end - e.begin) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, "data_offsets [", e.begin, ", ", e.end, "] hold ", e.end - e.begin,
                     " bytes, but shape [", absl::StrJoin(e.shape, ", "), "] of ", e.dtype_name,
                     " needs ", bytes ? absl::StrCat(*bytes) : std::string("more than 2^63")));
  }
  return absl::OkStatus();
}

// Checks that no two entries' byte ranges overlap (empty ones never do).
absl::Status CheckDisjoint(const std::string& file, std::vector<const RawEntry*> entries) {
  std::sort(entries.begin(), entries.end(),
            [](const RawEntry* a, const RawEntry* b) { return a->begin < b->begin; });
  const RawEntry* last = nullptr;
  for (const RawEntry* e : entries) {
    if (e->begin == e->end) continue;
    if (last != nullptr && e->begin < last->end) {
      return absl::InvalidArgumentError(
          absl::StrCat(file, ": tensors '", last->tensor, "' [", last->begin, ", ", last->end,
                       ") and '", e->tensor, "' [", e->begin, ", ", e->end, ") overlap"));
    }
    last = e;
  }
  return absl::OkStatus();
}

// Adds `e` to `index` as a loadable tensor, or records why it is skipped (an error when strict).
absl::Status Classify(const RawEntry& e, const std::string& path, absl::string_view stem,
                      int64_t data_start, bool strict, WeightFileIndex* index) {
  std::string reason;
  if (e.dtype == nullptr) {
    reason = absl::StrCat("unknown dtype '", e.dtype_name, "'");
  } else if (!e.dtype->loaded) {
    reason = absl::StrCat("dtype ", e.dtype_name, " (BF16, F16 and F32 load)");
  } else if (e.shape.size() != 2 || e.shape[0] == 0 || e.shape[1] == 0) {
    reason = absl::StrCat("shape [", absl::StrJoin(e.shape, ", "), "] (2-D, non-empty loads)");
  }
  if (reason.empty()) {
    index->tensors.push_back({.name = absl::StrCat(stem, "/", e.tensor),
                              .path = path,
                              .offset = data_start + e.begin,
                              .rows = e.shape[0],
                              .cols = e.shape[1],
                              .dtype = *e.dtype->loaded});
    return absl::OkStatus();
  }
  std::string line = absl::StrCat(path, ": tensor '", e.tensor, "' skipped: ", reason);
  if (strict) return absl::InvalidArgumentError(absl::StrCat(line, " (--weights_strict)"));
  index->skipped.push_back(std::move(line));
  return absl::OkStatus();
}

// The file's name without its folder and extension.
std::string Stem(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  const size_t dot = name.find_last_of('.');
  return dot == std::string::npos || dot == 0 ? name : name.substr(0, dot);
}

absl::StatusOr<WeightFileIndex> IndexNpy(std::ifstream& in, const std::string& path,
                                         int64_t file_bytes, bool strict) {
  absl::StatusOr<NpyHeader> h = ReadNpyHeader(in, file_bytes, path);
  if (!h.ok()) return h.status();
  WeightFileIndex index;
  std::string reason;
  std::optional<WeightDType> dtype;
  if (h->descr == "<f4") dtype = WeightDType::kF32;
  if (h->descr == "<f2") dtype = WeightDType::kF16;
  if (!dtype) {
    reason = absl::StrCat("dtype '", h->descr, "' (<f2 and <f4 load)");
  } else if (h->fortran_order) {
    reason = "Fortran order (C order loads)";
  } else if (h->shape.size() != 2 || h->shape[0] == 0 || h->shape[1] == 0) {
    reason = absl::StrCat("shape (", absl::StrJoin(h->shape, ", "), ") (2-D, non-empty loads)");
  }
  if (!reason.empty()) {
    std::string line = absl::StrCat(path, ": skipped: ", reason);
    if (strict) return absl::InvalidArgumentError(absl::StrCat(line, " (--weights_strict)"));
    index.skipped.push_back(std::move(line));
    return index;
  }
  const std::optional<int64_t> bytes =
      CheckedProduct(h->shape[0], h->shape[1], WeightDTypeBytes(*dtype));
  if (!bytes || *bytes > file_bytes - h->data_offset) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": shape (", h->shape[0], ", ",
                                                   h->shape[1], ") needs more than the ",
                                                   file_bytes - h->data_offset, " data bytes"));
  }
  index.tensors.push_back({.name = Stem(path),
                           .path = path,
                           .offset = h->data_offset,
                           .rows = h->shape[0],
                           .cols = h->shape[1],
                           .dtype = *dtype});
  return index;
}

absl::StatusOr<WeightFileIndex> IndexSafetensors(std::ifstream& in, const std::string& path,
                                                 int64_t file_bytes, bool strict) {
  std::string prefix(8, '\0');
  in.read(prefix.data(), std::min<int64_t>(8, file_bytes));
  absl::StatusOr<int64_t> n =
      SafetensorsHeaderLength(absl::string_view(prefix.data(), in.gcount()), file_bytes);
  if (!n.ok()) return absl::InvalidArgumentError(absl::StrCat(path, ": ", n.status().message()));
  std::string json(*n, '\0');
  in.read(json.data(), *n);
  if (!in) return absl::InvalidArgumentError(absl::StrCat(path, ": could not read the header"));
  return ParseSafetensorsHeader(json, path, Stem(path), file_bytes, strict);
}

// FP16 (IEEE binary16) to float, exactly.
float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);  // Inf or NaN (payload kept)
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  } else {
    // Zero or subnormal: mant * 2^-24, exact in float.
    const float f = std::ldexp(static_cast<float>(mant), -24);
    std::memcpy(&bits, &f, sizeof(bits));
    bits |= sign;
  }
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

}  // namespace

absl::StatusOr<int64_t> SafetensorsHeaderLength(absl::string_view prefix, int64_t file_bytes) {
  if (prefix.size() < 8 || file_bytes < 8) {
    return absl::InvalidArgumentError(
        "shorter than the 8-byte header length of a safetensors file");
  }
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(prefix[i]);
  if (n > static_cast<uint64_t>(kMaxSafetensorsHeaderBytes)) {
    return absl::InvalidArgumentError(absl::StrCat("header length ", n, " is above the limit of ",
                                                   kMaxSafetensorsHeaderBytes, " bytes"));
  }
  if (static_cast<int64_t>(n) > file_bytes - 8) {
    return absl::InvalidArgumentError(absl::StrCat(
        "header length ", n, " runs past the end of the file (", file_bytes, " bytes)"));
  }
  return static_cast<int64_t>(n);
}

absl::StatusOr<WeightFileIndex> ParseSafetensorsHeader(absl::string_view json,
                                                       const std::string& path,
                                                       absl::string_view stem, int64_t file_bytes,
                                                       bool strict) {
  google::protobuf::Struct header;
  if (auto s = google::protobuf::util::JsonStringToMessage(
          google::protobuf::StringPiece(json.data(), json.size()), &header);
      !s.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": the header is not a JSON object: ", s.message().as_string()));
  }
  const int64_t data_start = 8 + static_cast<int64_t>(json.size());
  if (data_start > file_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": the header runs past the file's end"));
  }
  std::vector<RawEntry> entries;
  for (const auto& [tensor, value] : header.fields()) {
    if (tensor == "__metadata__") continue;
    RawEntry e;
    if (absl::Status s = ParseEntry(path, tensor, value, &e); !s.ok()) return s;
    if (absl::Status s = CheckExtent(path, e, file_bytes - data_start); !s.ok()) return s;
    entries.push_back(std::move(e));
  }
  std::vector<const RawEntry*> sorted;
  for (const RawEntry& e : entries) sorted.push_back(&e);
  if (absl::Status s = CheckDisjoint(path, sorted); !s.ok()) return s;
  // The header's object order is not kept by the parser; load in name order.
  std::sort(sorted.begin(), sorted.end(),
            [](const RawEntry* a, const RawEntry* b) { return a->tensor < b->tensor; });
  WeightFileIndex index;
  for (const RawEntry* e : sorted) {
    if (absl::Status s = Classify(*e, path, stem, data_start, strict, &index); !s.ok()) return s;
  }
  return index;
}

absl::StatusOr<WeightFileIndex> IndexWeightFile(const std::string& path, bool strict) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  const int64_t file_bytes = static_cast<int64_t>(in.tellg());
  in.seekg(0);
  if (absl::EndsWith(path, ".npy")) return IndexNpy(in, path, file_bytes, strict);
  if (absl::EndsWith(path, ".safetensors")) return IndexSafetensors(in, path, file_bytes, strict);
  return absl::InvalidArgumentError(
      absl::StrCat(path, ": not a weight file (.safetensors or .npy)"));
}

void ConvertToBf16(WeightDType dtype, const char* in, int64_t count, char* out) {
  switch (dtype) {
    case WeightDType::kBF16:
      std::memcpy(out, in, count * 2);
      return;
    case WeightDType::kF16:
      for (int64_t i = 0; i < count; ++i) {
        uint16_t h;
        std::memcpy(&h, in + 2 * i, 2);
        const uint16_t b = FloatToBf16(HalfToFloat(h));
        std::memcpy(out + 2 * i, &b, 2);
      }
      return;
    case WeightDType::kF32:
      for (int64_t i = 0; i < count; ++i) {
        float f;
        std::memcpy(&f, in + 4 * i, 4);
        const uint16_t b = FloatToBf16(f);
        std::memcpy(out + 2 * i, &b, 2);
      }
      return;
  }
}

}  // namespace gemm::core
