// SerializeResponse / SerializeResponsePack (see response_wire.h).
//
// NOTE: protobuf writes known fields in field-number order, then unknown fields. A GemmResponse is
// request_id (1), outputs (2), then the rest (timing 3, kernel 4, error 5, unknown); an Output is
// shape (1), dtype (2), data (3). So each output's data is the last field of its Output and can
// follow that Output's other fields as a slice of its own, and the rest of the response is the
// message serialized with request_id and outputs taken out.
#include "server/grpc/response_wire.h"

#include <climits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "google/protobuf/io/coded_stream.h"

namespace gemm::service {
namespace {

using google::protobuf::io::CodedOutputStream;

constexpr uint32_t kLengthDelimited = 2;
constexpr int kResponseIdField = 1;       // GemmResponse.request_id
constexpr int kResponseOutputsField = 2;  // GemmResponse.outputs
constexpr int kOutputDataField = 3;       // Output.data
constexpr int kPackResponsesField = 1;    // GemmResponsePack.responses

uint32_t Tag(int field) { return (static_cast<uint32_t>(field) << 3) | kLengthDelimited; }

// Bytes of a length-delimited field's tag and length prefix, for a payload of `size` bytes.
size_t HeaderSize(int field, size_t size) {
  return CodedOutputStream::VarintSize32(Tag(field)) + CodedOutputStream::VarintSize64(size);
}

// Appends a length-delimited field's tag and length prefix to `out`.
void AppendHeader(int field, size_t size, std::string* out) {
  uint8_t buf[16];
  uint8_t* end = CodedOutputStream::WriteVarint32ToArray(Tag(field), buf);
  end = CodedOutputStream::WriteVarint64ToArray(size, end);
  out->append(reinterpret_cast<const char*>(buf), end - buf);
}

// Size of an Output of `fields` bytes without its data, with `data` bytes of data.
size_t OutputSize(size_t fields, size_t data) {
  return fields + (data > 0 ? HeaderSize(kOutputDataField, data) + data : 0);
}

// Small serialized bytes gathered into one slice each, between the slices added as they are.
class SliceWriter {
 public:
  // Appends a length-delimited field's tag and length prefix.
  void Header(int field, size_t size) { AppendHeader(field, size, &small_); }
  void Bytes(const std::string& bytes) { small_ += bytes; }
  // Appends `slice` as it is (shared, not copied).
  void Slice(const grpc::Slice& slice) {
    Flush();
    slices_.push_back(slice);
  }
  grpc::ByteBuffer Finish() {
    Flush();
    return grpc::ByteBuffer(slices_.data(), slices_.size());
  }

 private:
  void Flush() {
    if (small_.empty()) return;
    slices_.emplace_back(small_);
    small_.clear();
  }
  std::vector<grpc::Slice> slices_;
  std::string small_;
};

// The data slice of output `i` (empty when none).
grpc::Slice DataOf(const OutgoingResponse& r, int i) {
  return static_cast<size_t>(i) < r.data.size() ? r.data[i] : grpc::Slice();
}

// A response split into the parts written around its data slices.
struct ResponseParts {
  std::string id;                    // the request_id field (tag and length included)
  std::vector<std::string> outputs;  // each Output without its data
  std::string rest;                  // timing, kernel, error and unknown fields
  size_t size = 0;                   // the whole response with its data
};

absl::StatusOr<ResponseParts> Split(OutgoingResponse& r) {
  ResponseParts p;
  v1::GemmResponse& m = r.message;
  if (!m.request_id().empty()) {
    AppendHeader(kResponseIdField, m.request_id().size(), &p.id);
    p.id += m.request_id();
  }
  p.size = p.id.size();
  for (int i = 0; i < m.outputs_size(); ++i) {
    const v1::Output& o = m.outputs(i);
    const size_t data = DataOf(r, i).size();
    if (data > 0 && !o.data().empty()) {
      return absl::InternalError(
          absl::StrCat("output ", i, " carries data both in the message and in a slice"));
    }
    p.outputs.push_back(o.SerializeAsString());
    const size_t inner = OutputSize(p.outputs.back().size(), data);
    p.size += HeaderSize(kResponseOutputsField, inner) + inner;
  }
  // The rest: the message with request_id and outputs taken out for a moment.
  std::string id;
  id.swap(*m.mutable_request_id());
  google::protobuf::RepeatedPtrField<v1::Output> outputs;
  outputs.Swap(m.mutable_outputs());
  const bool serialized = m.SerializeToString(&p.rest);
  outputs.Swap(m.mutable_outputs());
  id.swap(*m.mutable_request_id());
  if (!serialized) return absl::InternalError("a GemmResponse does not serialize");
  p.size += p.rest.size();
  if (p.size > static_cast<size_t>(INT_MAX)) {
    return absl::InternalError(absl::StrCat("a GemmResponse of ", p.size,
                                            " bytes is over protobuf's 2 GiB message limit"));
  }
  return p;
}

void Write(const OutgoingResponse& r, const ResponseParts& p, SliceWriter& w) {
  w.Bytes(p.id);
  for (size_t i = 0; i < p.outputs.size(); ++i) {
    const grpc::Slice data = DataOf(r, static_cast<int>(i));
    const size_t inner = OutputSize(p.outputs[i].size(), data.size());
    w.Header(kResponseOutputsField, inner);
    w.Bytes(p.outputs[i]);
    if (data.size() > 0) {
      w.Header(kOutputDataField, data.size());
      w.Slice(data);
    }
  }
  w.Bytes(p.rest);
}

void FreeString(void* s) { delete static_cast<std::string*>(s); }
void DropOwner(void* owner) { delete static_cast<std::shared_ptr<const void>*>(owner); }

}  // namespace

size_t OutgoingResponse::ByteSize() const {
  size_t size = message.ByteSizeLong();
  for (int i = 0; i < message.outputs_size(); ++i) {
    const size_t data = DataOf(*this, i).size();
    if (data == 0) continue;
    const size_t before = message.outputs(i).ByteSizeLong();
    const size_t after = OutputSize(before, data);
    size += HeaderSize(kResponseOutputsField, after) + after -
            (HeaderSize(kResponseOutputsField, before) + before);
  }
  return size;
}

grpc::Slice SliceOwning(std::string bytes) {
  if (bytes.empty()) return grpc::Slice();
  auto* owned = new std::string(std::move(bytes));
  return grpc::Slice(owned->data(), owned->size(), &FreeString, owned);
}

grpc::Slice SliceHolding(absl::string_view bytes, std::shared_ptr<const void> owner) {
  if (bytes.empty()) return grpc::Slice();
  auto* held = new std::shared_ptr<const void>(std::move(owner));
  return grpc::Slice(const_cast<char*>(bytes.data()), bytes.size(), &DropOwner, held);
}

absl::StatusOr<grpc::ByteBuffer> SerializeResponse(OutgoingResponse& response) {
  absl::StatusOr<ResponseParts> parts = Split(response);
  if (!parts.ok()) return parts.status();
  SliceWriter w;
  Write(response, *parts, w);
  return w.Finish();
}

absl::StatusOr<grpc::ByteBuffer> SerializeResponsePack(
    absl::Span<OutgoingResponse* const> responses) {
  std::vector<ResponseParts> parts;
  parts.reserve(responses.size());
  size_t total = 0;
  for (OutgoingResponse* r : responses) {
    absl::StatusOr<ResponseParts> p = Split(*r);
    if (!p.ok()) return p.status();
    total += HeaderSize(kPackResponsesField, p->size) + p->size;
    parts.push_back(*std::move(p));
  }
  if (total > static_cast<size_t>(INT_MAX)) {
    return absl::InternalError(absl::StrCat("a GemmResponsePack of ", total,
                                            " bytes is over protobuf's 2 GiB message limit"));
  }
  SliceWriter w;
  for (size_t i = 0; i < parts.size(); ++i) {
    w.Header(kPackResponsesField, parts[i].size);
    Write(*responses[i], parts[i], w);
  }
  return w.Finish();
}

}  // namespace gemm::service
