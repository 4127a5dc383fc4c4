// Log-bucketed latency histogram for the load generator (HdrHistogram-style): values are
// non-negative integers (nanoseconds in practice), recorded exactly below 2^(sub_bucket_bits+1)
// and with a relative bucket width of at most 2^-sub_bucket_bits above. Percentiles select the
// exact rank (nearest-rank definition, like sorting every sample) and report the highest value
// of that rank's bucket clamped to the exact max, so a reported percentile never understates the
// sorted-data value and exceeds it by at most 2^-sub_bucket_bits relative. min, max, count and
// mean are exact. Not thread-safe: callers shard or lock.
#pragma once

#include <cstdint>
#include <vector>

namespace gemm::loadgen {

class Histogram {
 public:
  // `sub_bucket_bits` sets the resolution (10: buckets at most 0.1% wide). `max_value` is the
  // largest value kept in its own bucket; larger values are counted in the last bucket (min,
  // max and mean still see them exactly). Defaults cover 1 ns .. ~18 minutes.
  explicit Histogram(int sub_bucket_bits = 10, int64_t max_value = int64_t{1} << 40);

  // Records one value (negative values are recorded as 0).
  void Record(int64_t value);
  // Adds every sample of `other`, which must have the same configuration.
  void Merge(const Histogram& other);
  // Forgets every sample.
  void Clear();

  int64_t count() const { return count_; }
  // Smallest / largest recorded value; 0 when empty.
  int64_t min() const { return count_ ? min_ : 0; }
  int64_t max() const { return count_ ? max_ : 0; }
  // Arithmetic mean; 0 when empty.
  double mean() const { return count_ ? sum_ / static_cast<double>(count_) : 0.0; }

  // The value at percentile `p` in [0, 100]: the sample of rank max(1, ceil(p/100 * count)) in
  // sorted order, reported as the upper edge of its bucket clamped to [min, max]. p <= 0 gives
  // min, p >= 100 gives max; 0 when empty.
  int64_t Percentile(double p) const;

  // Bucket geometry, exposed for tests: index of the bucket holding `value`, and the lowest and
  // highest value that bucket holds.
  int BucketIndex(int64_t value) const;
  int64_t BucketLowest(int index) const;
  int64_t BucketHighest(int index) const;
  int bucket_count() const { return static_cast<int>(counts_.size()); }

 private:
  int sub_bucket_bits_;
  int64_t sub_bucket_count_;  // S = 2^sub_bucket_bits
  int64_t max_value_;
  std::vector<int64_t> counts_;
  int64_t count_ = 0;
  int64_t min_ = 0;
  int64_t max_ = 0;
  double sum_ = 0;
};

}  // namespace gemm::loadgen
