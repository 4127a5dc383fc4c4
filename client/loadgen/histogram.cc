// Log-bucketed histogram: bucket geometry and exact-rank percentile selection.
#include "client/loadgen/histogram.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace gemm::loadgen {

// Geometry: with S = 2^b sub-buckets, values v < 2S have their own bucket (index v). A value
// v >= 2S with highest set bit e has shift = e - b >= 1 and top = v >> shift in [S, 2S); its
// bucket index is S*shift + top and the bucket covers [top << shift, ((top + 1) << shift) - 1].
Histogram::Histogram(int sub_bucket_bits, int64_t max_value)
    : sub_bucket_bits_(std::clamp(sub_bucket_bits, 1, 20)),
      sub_bucket_count_(int64_t{1} << sub_bucket_bits_),
      max_value_(std::max<int64_t>(max_value, 2 * sub_bucket_count_)) {
  counts_.assign(BucketIndex(max_value_) + 1, 0);
}

int Histogram::BucketIndex(int64_t value) const {
  if (value < 0) value = 0;
  if (value > max_value_) value = max_value_;
  if (value < 2 * sub_bucket_count_) return static_cast<int>(value);
  const int e = std::bit_width(static_cast<uint64_t>(value)) - 1;
  const int shift = e - sub_bucket_bits_;
  const int64_t top = value >> shift;
  return static_cast<int>(sub_bucket_count_ * shift + top);
}

int64_t Histogram::BucketLowest(int index) const {
  if (index < 2 * sub_bucket_count_) return index;
  const int64_t shift = index / sub_bucket_count_ - 1;
  const int64_t top = index - sub_bucket_count_ * shift;
  return top << shift;
}

int64_t Histogram::BucketHighest(int index) const {
  if (index < 2 * sub_bucket_count_) return index;
  const int64_t shift = index / sub_bucket_count_ - 1;
  const int64_t top = index - sub_bucket_count_ * shift;
  return ((top + 1) << shift) - 1;
}

void Histogram::Record(int64_t value) {
  if (value < 0) value = 0;
  ++counts_[BucketIndex(value)];
  if (count_ == 0) {
    min_ = max_ = value;
  } else {
    min_ = std::min(min_, value);
    max_ = std::max(max_, value);
  }
  ++count_;
  sum_ += static_cast<double>(value);
}

void Histogram::Merge(const Histogram& other) {
  if (other.count_ == 0) return;
  const size_t n = std::min(counts_.size(), other.counts_.size());
  for (size_t i = 0; i < n; ++i) counts_[i] += other.counts_[i];
  for (size_t i = n; i < other.counts_.size(); ++i) counts_.back() += other.counts_[i];
  if (count_ == 0) {
    min_ = other.min_;
    max_ = other.max_;
  } else {
    min_ = std::min(min_, other.min_);
    max_ = std::max(max_, other.max_);
  }
  count_ += other.count_;
  sum_ += other.sum_;
}

void Histogram::Clear() {
  std::fill(counts_.begin(), counts_.end(), 0);
  count_ = 0;
  min_ = max_ = 0;
  sum_ = 0;
}

int64_t Histogram::Percentile(double p) const {
  if (count_ == 0) return 0;
  if (!(p > 0.0)) return min_;  // also NaN
  if (p >= 100.0) return max_;
  // Nearest rank: the smallest rank r with r >= p/100 * count. Computed in long double and
  // nudged so that e.g. p=99.9 and count=1000 gives exactly 999, not 1000 from rounding noise.
  const long double exact = static_cast<long double>(p) / 100.0L * count_;
  int64_t rank = static_cast<int64_t>(std::ceil(exact - 1e-9L));
  rank = std::clamp<int64_t>(rank, 1, count_);
  int64_t seen = 0;
  for (size_t i = 0; i < counts_.size(); ++i) {
    seen += counts_[i];
    if (seen >= rank) {
      return std::clamp(BucketHighest(static_cast<int>(i)), min_, max_);
    }
  }
  return max_;
}

}  // namespace gemm::loadgen
