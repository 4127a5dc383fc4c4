// ReceivedMessage (see received_message.h).
//
// NOTE: a wire-format scan of the received slices. Each field is handed to protobuf as it came
// (its raw bytes merged into the message it belongs to, in wire order, which is what parsing the
// whole message does), except two kinds of length-delimited fields: a singular bytes field, whose
// value is recorded where it lies and replaced by a marker naming the record, and a message field
// whose type holds bytes fields, which is scanned the same way into the sub-message. A marker is
// only ever set by the scan (every received value of such a field is replaced), so a marker found
// later in the message is one of ours, and protobuf's own rules (last value wins, a later oneof
// member clears the field) decide whether a record still applies.
#include "server/grpc/received_message.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

namespace gemm::service {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;

constexpr char kMarkerByte = '\xff';
constexpr size_t kMarkerBytes = 1 + sizeof(uint32_t);
constexpr int kMaxDepth = 32;  // nested messages scanned (protobuf allows 100)
constexpr uint64_t kMaxFieldNumber = (1 << 29) - 1;

std::string Marker(uint32_t index) {
  std::string m(kMarkerBytes, kMarkerByte);
  std::memcpy(m.data() + 1, &index, sizeof(index));
  return m;
}

bool MarkerIndex(const std::string& value, uint32_t* index) {
  if (value.size() != kMarkerBytes || value[0] != kMarkerByte) return false;
  std::memcpy(index, value.data() + 1, sizeof(*index));
  return true;
}

bool IsViewedBytes(const FieldDescriptor* f) {
  return f != nullptr && !f->is_repeated() && f->type() == FieldDescriptor::TYPE_BYTES;
}

// Whether messages of type `d` hold a viewed bytes field, directly or inside a message field.
bool WalkHoldsBytes(const Descriptor* d, int depth) {
  if (depth > kMaxDepth) return false;
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* f = d->field(i);
    if (IsViewedBytes(f)) return true;
    if (f->type() == FieldDescriptor::TYPE_MESSAGE && !f->is_map() &&
        WalkHoldsBytes(f->message_type(), depth + 1)) {
      return true;
    }
  }
  return false;
}

// WalkHoldsBytes, remembered per type (and thread: no lock).
bool HoldsBytes(const Descriptor* d) {
  thread_local absl::flat_hash_map<const Descriptor*, bool> known;
  auto [it, inserted] = known.try_emplace(d, false);
  if (inserted) it->second = WalkHoldsBytes(d, 0);
  return it->second;
}

// Reads the slices in order.
class Cursor {
 public:
  explicit Cursor(const std::vector<grpc::Slice>& slices) : slices_(slices) { SkipEmpty(); }
  // Bytes read so far.
  size_t pos() const { return pos_; }
  // Reads a varint (at most 10 bytes), appending its bytes to `*echo`.
  bool Varint(uint64_t* value, std::string* echo) {
    *value = 0;
    for (int shift = 0; shift < 70; shift += 7) {
      if (i_ == slices_.size()) return false;
      const uint8_t b = slices_[i_].begin()[off_];
      Advance(1);
      echo->push_back(static_cast<char>(b));
      *value |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return true;
    }
    return false;
  }
  // Takes the next `n` bytes: appended to `*copy` when given, else recorded in `*pieces`.
  bool Take(size_t n, std::string* copy, std::vector<absl::string_view>* pieces) {
    while (n > 0) {
      if (i_ == slices_.size()) return false;
      const size_t k = std::min(slices_[i_].size() - off_, n);
      const char* p = reinterpret_cast<const char*>(slices_[i_].begin()) + off_;
      if (copy != nullptr) {
        copy->append(p, k);
      } else {
        pieces->emplace_back(p, k);
      }
      Advance(k);
      n -= k;
    }
    return true;
  }

 private:
  void Advance(size_t k) {
    off_ += k;
    pos_ += k;
    if (off_ == slices_[i_].size()) {
      ++i_;
      off_ = 0;
      SkipEmpty();
    }
  }
  void SkipEmpty() {
    while (i_ < slices_.size() && slices_[i_].size() == 0) ++i_;
  }
  const std::vector<grpc::Slice>& slices_;
  size_t i_ = 0, off_ = 0, pos_ = 0;
};

}  // namespace

class ReceivedMessage::Scanner {
 public:
  explicit Scanner(ReceivedMessage* out) : out_(out), cursor_(out->slices_) {}

  // Scans the fields up to byte `end` into `message`. False when they do not parse.
  bool Scan(Message* message, size_t end, int depth) {
    if (depth > kMaxDepth) return false;
    std::string pending;  // raw fields not merged yet, in wire order
    auto flush = [&] {
      const bool ok = pending.empty() || message->MergeFromString(pending);
      pending.clear();
      return ok;
    };
    while (cursor_.pos() < end) {
      std::string head;  // the field's tag (and length) bytes
      uint64_t tag = 0;
      if (!cursor_.Varint(&tag, &head)) return false;
      const uint64_t number = tag >> 3;
      const int wire = static_cast<int>(tag & 7);
      if (number == 0 || number > kMaxFieldNumber) return false;
      const FieldDescriptor* f =
          message->GetDescriptor()->FindFieldByNumber(static_cast<int>(number));
      if (wire == 2) {
        uint64_t len = 0;
        if (!cursor_.Varint(&len, &head) || cursor_.pos() > end || len > end - cursor_.pos()) {
          return false;
        }
        if (IsViewedBytes(f)) {
          if (!flush() || !Record(message, f, len)) return false;
          continue;
        }
        if (f != nullptr && f->type() == FieldDescriptor::TYPE_MESSAGE && !f->is_map() &&
            HoldsBytes(f->message_type())) {
          if (!flush()) return false;
          Message* sub = f->is_repeated() ? message->GetReflection()->AddMessage(message, f)
                                          : message->GetReflection()->MutableMessage(message, f);
          if (!Scan(sub, cursor_.pos() + len, depth + 1)) return false;
          continue;
        }
        pending += head;
        if (!cursor_.Take(len, &pending, nullptr)) return false;
        continue;
      }
      pending += head;
      if (!TakeScalar(wire, &pending) || cursor_.pos() > end) return false;
    }
    return cursor_.pos() == end && flush();
  }

 private:
  // Records the next `len` bytes as the value of bytes field `f` of `message`.
  bool Record(Message* message, const FieldDescriptor* f, size_t len) {
    View view{.owner = message, .field = f->number()};
    if (!cursor_.Take(len, nullptr, &view.pieces)) return false;
    message->GetReflection()->SetString(message, f,
                                        Marker(static_cast<uint32_t>(out_->views_.size())));
    out_->views_.push_back(std::move(view));
    return true;
  }

  // Appends the value of a field of wire type `wire` other than length-delimited to `*out`;
  // false for groups (3, 4) and invalid wire types.
  bool TakeScalar(int wire, std::string* out) {
    uint64_t ignored = 0;
    switch (wire) {
      case 0:
        return cursor_.Varint(&ignored, out);
      case 1:
        return cursor_.Take(8, out, nullptr);
      case 5:
        return cursor_.Take(4, out, nullptr);
      default:
        return false;
    }
  }

  ReceivedMessage* const out_;
  Cursor cursor_;
};

absl::Status ReceivedMessage::Parse(const grpc::ByteBuffer& bytes, absl::string_view what,
                                    Message* message) {
  message->Clear();
  slices_.clear();
  views_.clear();
  bool ok = !bytes.Valid() || bytes.Dump(&slices_).ok();
  size_t total = 0;
  for (const grpc::Slice& s : slices_) total += s.size();
  if (ok) ok = Scanner(this).Scan(message, total, 0);
  if (ok) return absl::OkStatus();
  message->Clear();
  views_.clear();
  return absl::InvalidArgumentError(absl::StrCat(what, ": the bytes received do not parse as a ",
                                                 message->GetTypeName(), " message"));
}

const std::vector<absl::string_view>* ReceivedMessage::Bytes(const Message& owner,
                                                             int field) const {
  const FieldDescriptor* f = owner.GetDescriptor()->FindFieldByNumber(field);
  if (!IsViewedBytes(f)) return nullptr;
  std::string scratch;
  uint32_t index = 0;
  if (!MarkerIndex(owner.GetReflection()->GetStringReference(owner, f, &scratch), &index) ||
      index >= views_.size()) {
    return nullptr;
  }
  const View& view = views_[index];
  return view.owner == &owner && view.field == field ? &view.pieces : nullptr;
}

}  // namespace gemm::service
