// The training framework an island launches with, and the pipeline layer splits that framework's
// arguments can express. One source for the planner, which keeps to the splits every island of a
// pipeline can express (docs/planner.md#expressible-splits), and for the launch exporter, which
// writes them (docs/export.md#launch-arguments).
#pragma once

#include <span>
#include <string_view>

#include "core/chip.hpp"

namespace hetplan {

// Ascend NPUs train with MindSpeed-LLM (Megatron-LM core_v0.12.1 with MindSpeed's and
// MindSpeed-LLM's arguments); every other family with Megatron-LM or an adaptation taking its
// arguments (Megatron-Core 0.13 or later).
enum class TrainingFramework { megatron_lm, mindspeed_llm };

TrainingFramework framework_of(const ChipProfile& chip);
std::string_view framework_id(TrainingFramework framework);    // "megatron-lm", "mindspeed-llm"
std::string_view framework_name(TrainingFramework framework);  // "Megatron-LM", "MindSpeed-LLM"

// How a framework's arguments give the layers of each pipeline stage:
// - even: every stage alike, no argument (or --num-layers-per-virtual-pipeline-stage);
// - first_last: equal middle stages, the first and/or the last apart
//   (--decoder-first-pipeline-num-layers, --decoder-last-pipeline-num-layers; with model chunks,
//   --num-virtual-stages-per-pipeline-rank, each stage's layers shared evenly by its chunks);
// - layer_list: any split of one chunk per stage (MindSpeed-LLM's --num-layer-list, which its
//   argument checks refuse beside virtual pipeline stages);
// - layout: any split, and chunks of unequal size (Megatron-Core's
//   --pipeline-model-parallel-layout, from core_v0.13.0);
// - none: the framework cannot express it.
enum class SplitForm { even, first_last, layer_list, layout, none };

// The form in which `framework` expresses the layers per stage `split` with `virtual_stages`
// model chunks per stage; `unequal_chunks`: some stage's chunks differ in size.
SplitForm split_form(TrainingFramework framework, std::span<const int> split, int virtual_stages,
                     bool unequal_chunks = false);

// Whether a split with `virtual_stages` chunks per stage, each stage's layers shared evenly by
// its chunks, is expressible only as even or first_last by `framework` (MindSpeed-LLM with
// virtual stages); otherwise any split is.
bool needs_first_last_split(TrainingFramework framework, int virtual_stages);

}  // namespace hetplan
