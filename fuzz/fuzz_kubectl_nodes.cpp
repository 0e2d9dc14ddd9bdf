// parse_kubectl_nodes on arbitrary text, then the cluster file it would write (seed corpus:
// the kubectl get nodes fixture, cut).
#include "fuzz/fuzz_common.hpp"
#include "importers/k8s_inventory.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text = hetplan::fuzz::as_text(data, size);
  hetplan::fuzz::expect_only_input_errors([&] {
    const auto inventory = hetplan::importers::parse_kubectl_nodes(text, "fuzz-nodes.json");
    (void)hetplan::importers::cluster_yaml(inventory, "fuzz", "../profiles");
  });
  return 0;
}
