// The batch balance across replica groups against brute force on small problems built from the
// input's bytes: one to three groups, their replicas, micro-batch sizes, multiples and caps, step
// times from 0 and 1e-9 to 1e6 s, batches up to 96 sequences. A different least step, shares that
// break a constraint or miss the batch, or a batch the balance calls impossible that brute force
// makes (or the reverse), is a finding.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "fuzz/fuzz_common.hpp"
#include "models/batch_balance.hpp"
#include "tests/support/batch_brute_force.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  hetplan::fuzz::ByteReader in(data, size);
  std::vector<hetplan::models::ReplicaGroup> groups(static_cast<std::size_t>(1 + in.next() % 3));
  for (auto& g : groups) {
    g.replicas = 1 + in.next() % 4;
    g.micro_batch = 1 + in.next() % 3;
    g.multiple = 1 + in.next() % 3;
    g.max_micro_batches = 1 + in.next() % 24;
    g.fixed_s = in.time(-9, 16, 7);
    g.per_micro_batch_s = in.time(-9, 16, 7);
  }
  const int batch = 1 + in.next() % 96;
  const auto expected = hetplan::test::brute_force_batch(groups, batch);
  const auto got = hetplan::models::balance_batch(groups, batch);
  if (got.feasible != expected.feasible) __builtin_trap();
  if (!got.feasible) return 0;
  if (got.step_s != expected.step_s || got.micro_batches.size() != groups.size()) __builtin_trap();
  long long samples = 0;
  double step = 0;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const int m = got.micro_batches[g];
    if (m < groups[g].multiple || m > groups[g].max_micro_batches || m % groups[g].multiple != 0)
      __builtin_trap();
    samples += static_cast<long long>(groups[g].replicas) * groups[g].micro_batch * m;
    step = std::max(step, groups[g].step_s(m));
  }
  if (samples != batch || step != got.step_s) __builtin_trap();
  return 0;
}
