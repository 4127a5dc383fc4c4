// Unit tests of the load generator's pure parts: the histogram's percentiles against sorted
// exact data, workload/sweep parsing, and the report writers' structure.
#include "client/loadgen/histogram.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "client/loadgen/report.h"
#include "client/loadgen/workload.h"

namespace gemm::loadgen {
namespace {

// Nearest-rank percentile of sorted data, with p given in thousandths of a percent so that the
// rank is computed in exact integer arithmetic: rank = ceil(p/100 * n).
int64_t ExactPercentile(const std::vector<int64_t>& sorted, int64_t p_milli) {
  const int64_t n = static_cast<int64_t>(sorted.size());
  int64_t rank = (p_milli * n + 100'000 - 1) / 100'000;
  rank = std::clamp<int64_t>(rank, 1, n);
  return sorted[rank - 1];
}

constexpr int64_t kPercentilesMilli[] = {1000,   10'000, 25'000, 50'000, 75'000, 90'000,
                                         95'000, 99'000, 99'500, 99'900, 99'990, 99'999};

void ExpectMatchesSorted(const std::vector<int64_t>& values, int sub_bucket_bits) {
  Histogram h(sub_bucket_bits);
  for (int64_t v : values) h.Record(v);
  std::vector<int64_t> sorted = values;
  std::sort(sorted.begin(), sorted.end());
  ASSERT_EQ(h.count(), static_cast<int64_t>(sorted.size()));
  EXPECT_EQ(h.min(), sorted.front());
  EXPECT_EQ(h.max(), sorted.back());
  EXPECT_EQ(h.Percentile(0), sorted.front());
  EXPECT_EQ(h.Percentile(100), sorted.back());
  const double rel = std::ldexp(1.0, -sub_bucket_bits);
  for (int64_t pm : kPercentilesMilli) {
    const int64_t exact = ExactPercentile(sorted, pm);
    const int64_t got = h.Percentile(pm / 1000.0);
    // Never below the exact value (it is the bucket's upper edge), at most one bucket above.
    EXPECT_GE(got, exact) << "p" << pm / 1000.0;
    EXPECT_LE(static_cast<double>(got - exact), rel * static_cast<double>(exact))
        << "p" << pm / 1000.0 << " exact " << exact;
    // And it lies in the same bucket as the exact value.
    EXPECT_EQ(h.BucketIndex(got), h.BucketIndex(exact)) << "p" << pm / 1000.0;
  }
  double sum = 0;
  for (int64_t v : values) sum += static_cast<double>(v);
  EXPECT_NEAR(h.mean(), sum / values.size(), 1e-9 * sum / values.size());
}

TEST(HistogramTest, EmptyReportsZero) {
  Histogram h;
  EXPECT_EQ(h.count(), 0);
  EXPECT_EQ(h.Percentile(50), 0);
  EXPECT_EQ(h.min(), 0);
  EXPECT_EQ(h.max(), 0);
  EXPECT_EQ(h.mean(), 0);
}

TEST(HistogramTest, SmallValuesAreExact) {
  // Below 2^(bits+1) every value has its own bucket: percentiles equal the sorted data exactly.
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int64_t> d(0, 2047);
  std::vector<int64_t> v(10'001);
  for (auto& x : v) x = d(rng);
  Histogram h(10);
  for (int64_t x : v) h.Record(x);
  std::sort(v.begin(), v.end());
  for (int64_t pm : kPercentilesMilli) {
    EXPECT_EQ(h.Percentile(pm / 1000.0), ExactPercentile(v, pm)) << pm;
  }
}

TEST(HistogramTest, BucketLowerEdgesAreExact) {
  // Values that are a bucket's highest value come back exactly.
  Histogram h(7);
  std::vector<int64_t> v;
  for (int i = 0; i < h.bucket_count(); i += 37) v.push_back(h.BucketHighest(i));
  for (int64_t x : v) h.Record(x);
  std::sort(v.begin(), v.end());
  for (int64_t pm : kPercentilesMilli) {
    EXPECT_EQ(h.Percentile(pm / 1000.0), ExactPercentile(v, pm)) << pm;
  }
}

TEST(HistogramTest, GeometryIsContiguous) {
  Histogram h(4, int64_t{1} << 20);
  for (int i = 0; i + 1 < h.bucket_count(); ++i) {
    ASSERT_EQ(h.BucketHighest(i) + 1, h.BucketLowest(i + 1)) << i;
    ASSERT_EQ(h.BucketIndex(h.BucketLowest(i)), i);
    ASSERT_EQ(h.BucketIndex(h.BucketHighest(i)), i);
  }
}

TEST(HistogramTest, LogNormalLatenciesMatchSortedData) {
  std::mt19937_64 rng(42);
  std::lognormal_distribution<double> d(std::log(2e6), 0.8);  // ~2 ms median, in ns
  std::vector<int64_t> v(200'000);
  for (auto& x : v) x = static_cast<int64_t>(d(rng));
  ExpectMatchesSorted(v, 10);
  ExpectMatchesSorted(v, 7);
}

TEST(HistogramTest, HeavyTailAndTinyCounts) {
  for (int n : {1, 2, 3, 7, 10, 999, 1000, 1001}) {
    std::mt19937_64 rng(n);
    std::exponential_distribution<double> d(1e-6);
    std::vector<int64_t> v(n);
    for (auto& x : v) x = static_cast<int64_t>(d(rng)) + 1;
    v.back() = 3'000'000'000;  // one 3 s outlier
    ExpectMatchesSorted(v, 10);
  }
}

TEST(HistogramTest, NearestRankAtRoundNumbers) {
  // 1000 samples 1..1000 (exact region): p99.9 is the 999th, p50 the 500th.
  Histogram h(10);
  for (int i = 1; i <= 1000; ++i) h.Record(i);
  EXPECT_EQ(h.Percentile(50), 500);
  EXPECT_EQ(h.Percentile(99), 990);
  EXPECT_EQ(h.Percentile(99.9), 999);
  EXPECT_EQ(h.Percentile(100), 1000);
}

TEST(HistogramTest, MergeEqualsRecordingEverything) {
  std::mt19937_64 rng(3);
  std::lognormal_distribution<double> d(12, 1.5);
  Histogram a, b, all;
  for (int i = 0; i < 50'000; ++i) {
    const int64_t x = static_cast<int64_t>(d(rng));
    (i % 3 ? a : b).Record(x);
    all.Record(x);
  }
  a.Merge(b);
  EXPECT_EQ(a.count(), all.count());
  EXPECT_EQ(a.min(), all.min());
  EXPECT_EQ(a.max(), all.max());
  for (double p : {50.0, 90.0, 99.0, 99.9}) EXPECT_EQ(a.Percentile(p), all.Percentile(p));
}

TEST(HistogramTest, ValuesBeyondRangeKeepExactMax) {
  Histogram h(10, int64_t{1} << 30);
  h.Record(int64_t{1} << 40);
  h.Record(5);
  EXPECT_EQ(h.max(), int64_t{1} << 40);
  EXPECT_EQ(h.Percentile(100), int64_t{1} << 40);
  EXPECT_EQ(h.Percentile(50), 5);
  h.Record(-3);  // clamped to 0
  EXPECT_EQ(h.min(), 0);
}

TEST(WorkloadTest, ParsesShapesAndWeights) {
  auto s = ParseShapes("16x4096x4096@3, 128X64x32");
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->size(), 2u);
  EXPECT_EQ((*s)[0].m, 16);
  EXPECT_EQ((*s)[0].n, 4096);
  EXPECT_EQ((*s)[0].k, 4096);
  EXPECT_EQ((*s)[0].weight, 3);
  EXPECT_EQ((*s)[1].Name(), "128x64x32");
  EXPECT_EQ((*s)[1].weight, 1);
  EXPECT_DOUBLE_EQ((*s)[1].Flops(), 2.0 * 128 * 64 * 32);
  for (const char* bad : {"", "64x64", "0x1x1", "1x1x1@0", "1x1x1@-2", "axbxc", "1x1x1@2@3"}) {
    EXPECT_FALSE(ParseShapes(bad).ok()) << bad;
  }
}

TEST(WorkloadTest, ParsesSweeps) {
  EXPECT_EQ(*ParseSweep("1:64:x2"), (std::vector<double>{1, 2, 4, 8, 16, 32, 64}));
  EXPECT_EQ(*ParseSweep("1:50:x2"), (std::vector<double>{1, 2, 4, 8, 16, 32}));
  EXPECT_EQ(*ParseSweep("100:400:+100"), (std::vector<double>{100, 200, 300, 400}));
  EXPECT_EQ(*ParseSweep("4:12:4"), (std::vector<double>{4, 8, 12}));
  EXPECT_EQ(ParseSweep("0.1:0.3:+0.1")->size(), 3u);
  EXPECT_EQ(*ParseSweep("8"), (std::vector<double>{8}));
  EXPECT_EQ(*ParseSweep("1, 4,16"), (std::vector<double>{1, 4, 16}));
  for (const char* bad : {"", "0", "-1", "1:64", "1:64:x1", "64:1:x2", "1:2:+0", "a", "1:1e9:+1"}) {
    EXPECT_FALSE(ParseSweep(bad).ok()) << bad;
  }
}

TEST(WorkloadTest, ParsesKeyValueFiles) {
  auto kv = ParseKeyValueText("# mix\nshapes = 64x64x64@2, 8x8x8  # tiny\n\nB-Layout=nk\n");
  ASSERT_TRUE(kv.ok()) << kv.status();
  EXPECT_EQ(kv->at("shapes"), "64x64x64@2, 8x8x8");
  EXPECT_EQ(kv->at("b_layout"), "nk");
  EXPECT_FALSE(ParseKeyValueText("shapes 64x64x64").ok());
  EXPECT_FALSE(ParseKeyValueText("a=1\na=2").ok());
  EXPECT_EQ(*ParseBSource("Resident"), BSource::kResident);
  EXPECT_TRUE(*ParseLayoutNk("nk"));
  EXPECT_TRUE(*ParseOutputFp32("fp32"));
  EXPECT_TRUE(*ParsePriorityHigh("high"));
  WorkloadSpec w;
  ASSERT_TRUE(ParseRpc("stream", &w).ok());
  EXPECT_TRUE(w.streaming && !w.packed);
  ASSERT_TRUE(ParseRpc("Packed", &w).ok());
  EXPECT_TRUE(w.streaming && w.packed);
  ASSERT_TRUE(ParseRpc("unary", &w).ok());
  EXPECT_FALSE(w.streaming || w.packed);
  EXPECT_FALSE(ParseRpc("bidi", &w).ok());
}

TEST(WorkloadTest, PayloadBytes) {
  WorkloadSpec w;
  ShapeSpec s{.m = 2, .n = 3, .k = 4};
  EXPECT_EQ(w.RequestBytes(s), (2 * 4 + 4 * 3) * 2);
  EXPECT_EQ(w.ResponseBytes(s), 2 * 3 * 2);
  w.b_source = BSource::kResident;
  w.output_fp32 = true;
  EXPECT_EQ(w.RequestBytes(s), 2 * 4 * 2);
  EXPECT_EQ(w.ResponseBytes(s), 2 * 3 * 4);
  // Mixture-of-experts steps: one A and one D per expert of the request.
  ASSERT_TRUE(ParseExperts("8:2", &w).ok());
  EXPECT_EQ(w.RequestBytes(s), 2 * 2 * 4 * 2);
  EXPECT_EQ(w.ResponseBytes(s), 2 * 2 * 3 * 4);
}

TEST(WorkloadTest, ParsesExperts) {
  WorkloadSpec w;
  ASSERT_TRUE(ParseExperts("8:2", &w).ok());
  EXPECT_EQ(w.experts, 8);
  EXPECT_EQ(w.experts_per_request, 2);
  EXPECT_NE(w.Describe().find("experts=8:2"), std::string::npos) << w.Describe();
  ASSERT_TRUE(ParseExperts("", &w).ok());
  EXPECT_EQ(w.experts, 0);
  EXPECT_EQ(w.experts_per_request, 0);
  ASSERT_TRUE(ParseExperts("4:4", &w).ok());
  for (const char* bad : {"8", "8:0", "2:3", "0:0", "x:1", "8:2:1", "5000:1"}) {
    EXPECT_FALSE(ParseExperts(bad, &w).ok()) << bad;
  }
}

Report SampleReport() {
  Report r;
  r.info.targets = {"localhost:1"};
  r.info.workload.shapes = {ShapeSpec{.m = 64, .n = 64, .k = 64}};
  r.info.command_line = "gemm_loadgen --shapes=\"64x64x64\" <&>";
  for (int c : {1, 2}) {
    PointResult p;
    p.concurrency = c;
    p.windows = 3;
    p.stable = true;
    p.window_throughput = {100, 101, 99};
    p.window_latency_ms = {1, 1, 1};
    p.measured.duration_s = 2;
    for (int i = 1; i <= 200; ++i) p.measured.latency_ns.Record(i * 10'000);
    p.measured.ok = 200;
    p.measured.flops = 200 * 2.0 * 64 * 64 * 64;
    p.measured.failed = c == 2 ? 3 : 0;
    if (c == 2) p.measured.errors_by_code[14] = 3;
    r.points.push_back(p);
  }
  return r;
}

TEST(ReportTest, SummaryFigures) {
  const Report r = SampleReport();
  const PointSummary s = Summarize(r.points[0]);
  EXPECT_DOUBLE_EQ(s.throughput_rps, 100);
  EXPECT_DOUBLE_EQ(s.tflops, 100 * 2.0 * 64 * 64 * 64 / 1e12);
  // The 100th of 200 samples is 1,000,000 ns, reported as its bucket's upper edge (<= 0.1% above).
  EXPECT_GE(s.lat_p50_ms, 1.0);
  EXPECT_LE(s.lat_p50_ms, 1.001);
  EXPECT_DOUBLE_EQ(s.lat_max_ms, 2.0);
  EXPECT_EQ(FormatErrors(r.points[1].measured.errors_by_code), "UNAVAILABLE=3");
}

// The server's copy-in, compute and copy-out are averaged over the responses whose GPU phases
// it timed (it times every n-th batch); queue and total over every response. All in ms.
TEST(ReportTest, ServerGpuPhasesAveragedOverTimedResponsesOnly) {
  Report r = SampleReport();
  ServerTimingSums& st = r.points[0].measured.server;
  st.responses = 8;
  st.gpu_timed = 2;
  st.queue_us = 8 * 40;
  st.total_us = 8 * 300;
  st.compute_us = 2 * 68;
  st.copy_in_us = 2 * 7;
  st.copy_out_us = 2 * 5;
  const PointSummary s = Summarize(r.points[0]);
  EXPECT_DOUBLE_EQ(s.server_queue_ms, 0.040);
  EXPECT_DOUBLE_EQ(s.server_total_ms, 0.300);
  EXPECT_DOUBLE_EQ(s.server_compute_ms, 0.068);
  EXPECT_DOUBLE_EQ(s.server_copy_in_ms, 0.007);
  EXPECT_DOUBLE_EQ(s.server_copy_out_ms, 0.005);
  st.gpu_timed = 0;  // none timed: no figure rather than a made-up one
  st.compute_us = 0;
  EXPECT_DOUBLE_EQ(Summarize(r.points[0]).server_compute_ms, 0);
}

// The compute by batch rows counts each batch once, whatever number of its responses arrived,
// and averages per batch; the JSON report lists it by rows.
TEST(ReportTest, ComputeByBatchRowsCountsEachBatchOnce) {
  Report r = SampleReport();
  ServerTimingSums& st = r.points[0].measured.server;
  st.AddBatchCompute(32, 2, 50);  // both responses of one 2-request batch
  st.AddBatchCompute(32, 2, 50);
  st.AddBatchCompute(32, 1, 70);  // a batch of one request with 32 rows
  st.AddBatchCompute(16, 1, 30);
  st.AddBatchCompute(16, 0, 99);  // no batch: ignored
  ASSERT_EQ(st.compute_by_rows.size(), 2u);
  EXPECT_DOUBLE_EQ(st.compute_by_rows[32].batches, 2.0);
  EXPECT_DOUBLE_EQ(st.compute_by_rows[32].compute_us / st.compute_by_rows[32].batches, 60.0);
  EXPECT_DOUBLE_EQ(st.compute_by_rows[16].batches, 1.0);
  ServerTimingSums merged;
  merged.Merge(st);
  merged.Merge(st);
  EXPECT_DOUBLE_EQ(merged.compute_by_rows[16].batches, 2.0);
  EXPECT_DOUBLE_EQ(merged.compute_by_rows[16].compute_us, 60.0);
  EXPECT_NE(FormatJson(r).find("\"compute_ms_by_batch_rows\": [[16, 1, 0.03], [32, 2, 0.06]]"),
            std::string::npos)
      << FormatJson(r);
}

// Client+transport is the latency the client measured less the server's total, per response.
TEST(ReportTest, ClientTransportIsLatencyLessServerTotal) {
  Report r = SampleReport();
  ServerTimingSums& st = r.points[0].measured.server;
  st.responses = 4;
  st.total_us = 4 * 250;
  st.latency_us = 4 * 1000;
  const PointSummary s = Summarize(r.points[0]);
  EXPECT_DOUBLE_EQ(s.client_transport_ms, 0.750);
  EXPECT_DOUBLE_EQ(s.server_total_ms, 0.250);
  EXPECT_DOUBLE_EQ(Summarize(SampleReport().points[0]).client_transport_ms, 0);  // no timing
}

TEST(ReportTest, P95IsReported) {
  const Report r = SampleReport();
  const PointSummary s = Summarize(r.points[0]);
  // The 190th of 200 samples (10 us apart) is 1.9 ms; a bucket edge at most 0.1% above it.
  EXPECT_GE(s.lat_p95_ms, 1.9);
  EXPECT_LE(s.lat_p95_ms, 1.9 * 1.001);
  EXPECT_NE(FormatCsv(r).find(",lat_p95_ms,"), std::string::npos);
  EXPECT_NE(FormatJson(r).find("\"p95\": "), std::string::npos);
  EXPECT_NE(FormatTable(r).find(" p95 "), std::string::npos);
}

// Every time in a report is in milliseconds: no column or key in another time unit.
TEST(ReportTest, OneTimeUnitPerReport) {
  const Report r = SampleReport();
  const std::string csv = FormatCsv(r);
  const std::string header = csv.substr(0, csv.find('\n'));
  for (const char* other : {"_us,", "_s,", "_ns,", "_us\n", "_s\n"}) {
    EXPECT_EQ((header + "\n").find(other), std::string::npos) << other << " in " << header;
  }
  const std::string json = FormatJson(r);
  for (const char* other : {"_us\"", "_s\"", "_ns\""}) {
    EXPECT_EQ(json.find(other), std::string::npos) << other;
  }
  EXPECT_NE(json.find("\"server_timing_ms\""), std::string::npos);
  const std::string table = FormatTable(r);
  EXPECT_NE(table.find("times in ms"), std::string::npos);
  EXPECT_EQ(table.find(" us"), std::string::npos);
}

TEST(ReportTest, CsvHasOneRowPerPointAndStableColumns) {
  const std::string csv = FormatCsv(SampleReport());
  std::vector<std::string> lines;
  size_t start = 0;
  for (size_t nl; (nl = csv.find('\n', start)) != std::string::npos; start = nl + 1) {
    lines.push_back(csv.substr(start, nl - start));
  }
  ASSERT_EQ(lines.size(), 3u);
  const auto columns = [](const std::string& l) { return std::count(l.begin(), l.end(), ',') + 1; };
  EXPECT_EQ(columns(lines[1]), columns(lines[0]));
  EXPECT_EQ(columns(lines[2]), columns(lines[0]));
  EXPECT_NE(lines[2].find("UNAVAILABLE=3"), std::string::npos);
}

TEST(ReportTest, JsonAndHtmlAreEscaped) {
  const Report r = SampleReport();
  const std::string json = FormatJson(r);
  EXPECT_NE(json.find("\"command_line\": \"gemm_loadgen --shapes=\\\"64x64x64\\\" <&>\""),
            std::string::npos);
  EXPECT_NE(json.find("\"UNAVAILABLE\": 3"), std::string::npos);
  const std::string html = FormatHtml(r);
  EXPECT_NE(html.find("&lt;&amp;&gt;"), std::string::npos);
  EXPECT_EQ(html.find("<&>"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  size_t charts = 0;
  for (size_t at = 0;
       (at = html.find("<svg xmlns=\"http://www.w3.org/2000/svg\"", at)) != std::string::npos;
       ++at) {
    ++charts;
  }
  EXPECT_EQ(charts, 3u);
  EXPECT_GE(std::count(html.begin(), html.end(), '\n'), 10);
}

}  // namespace
}  // namespace gemm::loadgen
