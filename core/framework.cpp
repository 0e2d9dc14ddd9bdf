#include "core/framework.hpp"

#include <algorithm>

namespace hetplan {

TrainingFramework framework_of(const ChipProfile& chip) {
  return chip.family == "ascend" ? TrainingFramework::mindspeed_llm
                                 : TrainingFramework::megatron_lm;
}

std::string_view framework_id(TrainingFramework framework) {
  return framework == TrainingFramework::mindspeed_llm ? "mindspeed-llm" : "megatron-lm";
}

std::string_view framework_name(TrainingFramework framework) {
  return framework == TrainingFramework::mindspeed_llm ? "MindSpeed-LLM" : "Megatron-LM";
}

bool needs_first_last_split(TrainingFramework framework, int virtual_stages) {
  return framework == TrainingFramework::mindspeed_llm && virtual_stages > 1;
}

SplitForm split_form(TrainingFramework framework, std::span<const int> split, int virtual_stages,
                     bool unequal_chunks) {
  if (split.empty()) return SplitForm::even;
  const bool mindspeed = framework == TrainingFramework::mindspeed_llm;
  if (unequal_chunks) return mindspeed ? SplitForm::none : SplitForm::layout;
  if (std::all_of(split.begin(), split.end(), [&](int n) { return n == split[0]; }))
    return SplitForm::even;
  if (mindspeed && virtual_stages <= 1) return SplitForm::layer_list;
  // Megatron-Core gives the middle stages what the first and the last leave, in equal parts.
  // With two stages there is no middle: the first stage's count alone says it.
  const std::size_t p = split.size();
  const bool middle_equal = p <= 2 || std::all_of(split.begin() + 1, split.end() - 1,
                                                  [&](int n) { return n == split[1]; });
  if (middle_equal) return SplitForm::first_last;
  return mindspeed ? SplitForm::none : SplitForm::layout;
}

}  // namespace hetplan
