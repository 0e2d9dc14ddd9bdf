// Plans written by hand for tests.
#pragma once

#include <string>
#include <vector>

#include "core/plan.hpp"

namespace hetplan::test {

// A plan on one island: stages of the given layer counts, each (tp, dp, ep), with
// `virtual_stages` chunks per stage (interleaved when more than one).
inline Plan plan_on(const std::string& island, const std::vector<int>& layers, int tp, int dp,
                    int virtual_stages = 1, int ep = 1) {
  Plan plan;
  plan.name = "hand-made";
  plan.schedule = virtual_stages > 1 ? Schedule::interleaved : Schedule::one_f_one_b;
  plan.virtual_stages = virtual_stages;
  int first = 0;
  for (const int n : layers) {
    PlanStage stage{island, first, n, tp, dp, {}, {}};
    stage.ep = ep;
    plan.stages.push_back(stage);
    first += n;
  }
  return plan;
}

}  // namespace hetplan::test
