// How SimGrid's cost per flow grows with the flows in flight, apart from hetplan's twin:
// `hetplan_simgrid_flows ACTORS ROUNDS FLOWS` starts ACTORS actors, each on its own pair of hosts
// joined by its own link (so no two flows share a resource), and each runs ROUNDS rounds of FLOWS
// host-to-host flows started together and waited for; each actor's flows are a byte longer than
// the previous actor's, so that actors finish at different times, as the twin's flows do. The flows in flight are ACTORS x FLOWS;
// the total is ACTORS x ROUNDS x FLOWS. Prints the wall time per flow (docs/twin.md#speed).
#include <simgrid/s4u.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace sg4 = simgrid::s4u;

int main(int argc, char** argv) {
  sg4::Engine engine(&argc, argv);
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s ACTORS ROUNDS FLOWS\n", argv[0]);
    return 2;
  }
  const int actors = std::atoi(argv[1]);
  const int rounds = std::atoi(argv[2]);
  const int flows = std::atoi(argv[3]);
  if (actors < 1 || rounds < 1 || flows < 1) {
    std::fprintf(stderr, "ACTORS, ROUNDS and FLOWS are positive integers\n");
    return 2;
  }
  auto* zone = sg4::create_full_zone("pairs");
  std::vector<sg4::Host*> hosts;
  for (int i = 0; i < 2 * actors; ++i)
    hosts.push_back(zone->create_host("host" + std::to_string(i), 1e9));
  for (int i = 0; i < actors; ++i) {
    const sg4::Link* link = zone->create_link("link" + std::to_string(i), 1e9)->seal();
    zone->add_route(hosts[2 * i]->get_netpoint(), hosts[2 * i + 1]->get_netpoint(), nullptr,
                    nullptr, {sg4::LinkInRoute(link)}, true);
  }
  zone->seal();
  for (int i = 0; i < actors; ++i) {
    sg4::Actor::create("actor" + std::to_string(i), hosts[2 * i], [&hosts, i, rounds, flows] {
      for (int r = 0; r < rounds; ++r) {
        std::vector<sg4::CommPtr> comms;
        for (int f = 0; f < flows; ++f)
          comms.push_back(sg4::Comm::sendto_async(hosts[2 * i], hosts[2 * i + 1],
                                                  static_cast<std::uint64_t>(1000000 + i)));
        sg4::Comm::wait_all(comms);
      }
    });
  }
  const auto start = std::chrono::steady_clock::now();
  engine.run();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double total = static_cast<double>(actors) * rounds * flows;
  std::printf("%d flows in flight, %.0f flows: %.3f s, %.2f us per flow\n", actors * flows, total,
              seconds, seconds / total * 1e6);
  return 0;
}
