// formats::check_file on arbitrary text written to a file: covers the dispatch on `schema:` and
// the file-based loaders (cluster, workload, scenario). The file is written into a scratch copy
// of tests/formats/data (with profiles/ linked beside it, as in the source tree), so that
// relative references in the input (`cluster: cluster.yaml`, `hf_config: hf/gpt2.json`,
// `profiles: [../../../profiles]`) reach real files.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>

#include <stdexcept>

#include "formats/loaders.hpp"
#include "formats/writers.hpp"
#include "fuzz/fuzz_common.hpp"

namespace {

namespace fs = std::filesystem;

struct Scratch {
  hetplan::fuzz::ScratchFolder folder{"hetplan-fuzz-"};
  std::string input;

  Scratch() {
    const fs::path source = HETPLAN_SOURCE_DIR;
    const fs::path& root = folder.path();
    fs::create_directories(root / "tests" / "formats");
    fs::copy(source / "tests" / "formats" / "data", root / "tests" / "formats" / "data",
             fs::copy_options::recursive);
    fs::create_directory_symlink(source / "profiles", root / "profiles");
    input = (root / "tests" / "formats" / "data" / "fuzz-input.yaml").string();
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const Scratch scratch;
  hetplan::fuzz::write_input(scratch.input, data, size);
  hetplan::fuzz::expect_only_input_errors(
      [&] { (void)hetplan::formats::check_file(scratch.input); });
  // A cluster it reads: its node counts edited in place (as the GUI saves them) either are
  // refused or read back as edited.
  std::optional<hetplan::Cluster> cluster;
  try {
    cluster = hetplan::formats::load_cluster(scratch.input);
  } catch (const std::exception&) {
    return 0;
  }
  hetplan::Cluster edited = *cluster;
  for (auto& island : edited.islands) {
    island.nodes = island.nodes % 1000 + 7;
    island.free_nodes = island.nodes - 1;
  }
  std::string text;
  try {
    text = hetplan::formats::edit_island_counts(
        std::string(reinterpret_cast<const char*>(data), size), *cluster, edited);
  } catch (const std::invalid_argument&) {
    return 0;
  }
  {
    std::ofstream out(scratch.input, std::ios::binary | std::ios::trunc);
    out << text;
  }
  const hetplan::Cluster back = hetplan::formats::load_cluster(scratch.input);  // must read
  for (const auto& island : edited.islands) {
    const hetplan::Island* read = back.find_island(island.name);
    if (!read || read->nodes != island.nodes || read->free_nodes != island.free_nodes) std::abort();
  }
  return 0;
}
