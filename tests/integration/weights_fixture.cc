// Weight repository server test helpers.
#include "tests/integration/weights_fixture.h"

#include <gtest/gtest.h>

#include <cstring>

#include "common/bf16.h"
#include "common/npy.h"
#include "tests/common/weight_files.h"
#include "tests/integration/test_util.h"

namespace gemm::testing {
namespace {

// Values k/64, |k| < 64: exact in BF16 and FP16.
std::vector<float> ExactValues(int64_t count, int seed) {
  std::vector<float> v(count);
  for (int64_t i = 0; i < count; ++i) v[i] = static_cast<float>((i * 37 + seed) % 127 - 63) / 64;
  return v;
}

// FP16 bytes of values that are exact FP16 normals or zero.
std::string F16Bytes(const std::vector<float>& values) {
  std::string out(values.size() * 2, '\0');
  for (size_t i = 0; i < values.size(); ++i) {
    uint32_t u;
    std::memcpy(&u, &values[i], 4);
    uint16_t h = static_cast<uint16_t>((u >> 16) & 0x8000u);
    if ((u & 0x7fffffffu) != 0) {
      h |= static_cast<uint16_t>((((u >> 23) & 0xff) - 112) << 10 | ((u >> 13) & 0x3ff));
    }
    std::memcpy(out.data() + 2 * i, &h, 2);
  }
  return out;
}

}  // namespace

std::vector<RepositoryWeight> WriteTestRepository(const std::string& folder) {
  const std::vector<float> q = ExactValues(24 * 16, 1), k = ExactValues(8 * 16, 2),
                           v = ExactValues(12 * 16, 3), proj = ExactValues(5 * 16, 4);
  WriteBytes(folder + "/model.safetensors", SafetensorsFile({{"q", "BF16", {24, 16}, Bf16Bytes(q)},
                                                             {"k", "F16", {8, 16}, F16Bytes(k)},
                                                             {"v", "F32", {12, 16}, F32Bytes(v)}}));
  EXPECT_TRUE(WriteNpy(folder + "/proj.npy", {5, 16}, proj).ok());
  return {{"model/k", 8, 16, Bf16Bytes(k)},
          {"model/q", 24, 16, Bf16Bytes(q)},
          {"model/v", 12, 16, Bf16Bytes(v)},
          {"proj", 5, 16, Bf16Bytes(proj)}};
}

absl::StatusOr<double> GemmByName(client::GemmClient& c, const RepositoryWeight& w, int64_t m,
                                  absl::BitGen& gen) {
  HostProblem p = RandomProblem(m, w.n, w.k, /*b_nk=*/true, false, 1.0f, 0.0f, gen);
  p.b = w.bf16;
  v1::GemmRequest request;
  FillProto(p, request.mutable_problem());
  request.mutable_problem()->set_b_handle(w.name);
  auto response = c.Gemm(request, absl::Seconds(20));
  if (!response.ok()) return response.status();
  if (response->outputs_size() != 1) return absl::InternalError("not one output");
  return OutputError(p, response->outputs(0));
}

}  // namespace gemm::testing
