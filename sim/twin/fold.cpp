#include "sim/twin/fold.hpp"

#include <algorithm>
#include <cstddef>

namespace hetplan::sim::twin {

namespace {

// Whether periods of `k` replicas fill whole leaf groups of every stage's island, hold whole
// expert-parallel exchanges, and start on a leaf group's first chip.
bool period_fits(const TwinInput& in, int k) {
  for (const TwinStage& st : in.stages) {
    const TwinIsland& ti = in.islands[static_cast<std::size_t>(st.island)];
    const long long leaf_chips = static_cast<long long>(ti.nodes_per_leaf) * ti.chips_per_node;
    if (st.first_chip % leaf_chips != 0) return false;
    if (static_cast<long long>(k) * st.tp % leaf_chips != 0) return false;
    if (k % exchange_replicas(st) != 0) return false;
  }
  return true;
}

}  // namespace

std::vector<int> Folding::images(int island, int node) const {
  const FoldedNode& f = nodes[static_cast<std::size_t>(island)][static_cast<std::size_t>(node)];
  const int within = f.offset % f.period_nodes;
  if (f.offset < f.period_nodes) return {f.region_node + within};
  std::vector<int> out;
  const int periods = full_dp / period;
  out.reserve(static_cast<std::size_t>(periods - 1));
  for (int q = 1; q < periods; ++q) out.push_back(f.region_node + q * f.period_nodes + within);
  return out;
}

std::optional<Folding> fold_replicas(const TwinInput& in) {
  if (!in.fold_replicas || in.stages.empty() || in.jitter > 0 || !in.stragglers.empty())
    return std::nullopt;
  const int dp = in.stages.front().dp;  // every stage's (check_twin_input)
  // Every island holds stages (the folded island is made of their chips).
  std::vector<bool> used(in.islands.size(), false);
  for (const TwinStage& st : in.stages) used[static_cast<std::size_t>(st.island)] = true;
  if (std::find(used.begin(), used.end(), false) != used.end()) return std::nullopt;

  // The shortest period with at least three of them in the plan.
  int k = 0;
  for (int candidate = 1; 3 * candidate <= dp; ++candidate) {
    if (dp % candidate == 0 && period_fits(in, candidate)) {
      k = candidate;
      break;
    }
  }
  if (k == 0) return std::nullopt;

  Folding f;
  f.period = k;
  f.full_dp = dp;
  f.input = in;
  f.nodes.resize(in.islands.size());
  std::vector<int> next_node(in.islands.size(), 0);
  for (TwinStage& st : f.input.stages) {
    const auto i = static_cast<std::size_t>(st.island);
    const int cpn = in.islands[i].chips_per_node;
    const int period_nodes = k * st.tp / cpn;
    const int region_node = st.first_chip / cpn;
    st.dp = 2 * k;
    st.first_chip = next_node[i] * cpn;
    for (int offset = 0; offset < 2 * period_nodes; ++offset)
      f.nodes[i].push_back({region_node, period_nodes, offset});
    next_node[i] += 2 * period_nodes;
  }
  for (std::size_t i = 0; i < in.islands.size(); ++i) f.input.islands[i].nodes = next_node[i];
  for (TwinSpine& spine : f.input.spines) spine.speed /= f.scale();
  for (TwinZoneLink& link : f.input.zone_links) link.speed /= f.scale();
  return f;
}

}  // namespace hetplan::sim::twin
