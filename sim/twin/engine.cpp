#include "sim/twin/engine.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <set>
#include <simgrid/s4u.hpp>
#include <stdexcept>
#include <unordered_map>

#include "sim/pipeline_schedule.hpp"
#include "sim/seeded.hpp"
#include "sim/twin/fold.hpp"

namespace hetplan::sim::twin {

namespace sg4 = simgrid::s4u;
using models::Collective;
using models::CollectiveAlgorithm;

std::string_view to_string(EventKind kind) {
  switch (kind) {
    case EventKind::forward:
      return "forward";
    case EventKind::backward:
      return "backward";
    case EventKind::send:
      return "send";
    case EventKind::receive_wait:
      return "wait for input";
    case EventKind::sync_wait:
      return "wait for gradient sync";
    case EventKind::optimizer:
      return "optimizer";
    case EventKind::reduce_scatter:
      return "reduce-scatter";
    case EventKind::all_gather:
      return "all-gather";
    case EventKind::all_reduce:
      return "all-reduce";
    case EventKind::all_to_all:
      return "all-to-all";
    case EventKind::expert_wait:
      return "wait for expert-parallel group";
  }
  return "?";
}

namespace {

// A flow's bytes as SimGrid's 64-bit payload. The input's messages are at most 1e18 bytes
// (check_twin_input), but a block's flows add up several; past 2^63 the count saturates rather
// than wrapping.
std::uint64_t payload(double bytes) {
  return static_cast<std::uint64_t>(std::min(std::ceil(bytes), 0x1p63));
}

// ---------------------------------------------------------------------------------------------
// The platform: SimGrid zones, hosts and links, and the same routes as link indices for the
// load report.
//
//   root (full) ── zone link ── fabric zone (star, its spine router as gateway)
//     fabric zone ── leaf uplink + spine ── leaf group (star, its leaf router as gateway)
//       leaf group ── leaf switch ── node (full: chips and a gateway)
//         node: chip ─ intra link ─ chip (plus the cross-group links between fast groups),
//               chip ─ its NIC ─ gateway
// ---------------------------------------------------------------------------------------------

struct LinkInfo {
  std::string name;
  TwinLinkKind kind = TwinLinkKind::nic;
  double speed = 0;
  double bytes = 0;
  std::vector<double> job_bytes;  // per job, when several jobs share the platform
  // A node's or a leaf group's link, for a folded plan's report (unfolded_links): its island,
  // node or leaf (-1: neither), and its name after the number.
  int island = -1;
  int node = -1;
  int leaf = -1;
  std::string tail;
};

// Whether blocks of `block` consecutive chips fit island `ti`: whole blocks in a node and in a
// fast group, and each block either owns whole NICs or lies among the chips of one NIC.
bool block_fits(const TwinIsland& ti, int block) {
  const int cpn = ti.chips_per_node;
  if (cpn % block != 0 || ti.intra_group % block != 0) return false;
  return (ti.nics * block) % cpn == 0 || (cpn % ti.nics == 0 && (cpn / ti.nics) % block == 0);
}

// The chips that act as one host of the platform (docs/twin.md#speed): the tensor-parallel
// ranks of a replica run in lockstep and send alike, each to its peer's rank, so that a block of
// them is one host whose links are its chips' together, and their flows to another block are one
// flow of their bytes together. The largest divisor of every stage's tp that fits every island,
// and 1 when two stages of one pipeline differ in tp (their sends pair ranks unevenly).
int chip_block(const std::vector<TwinInput>& jobs) {
  int block = 0;
  for (const TwinInput& job : jobs) {
    if (!job.chip_blocks) return 1;
    for (const TwinStage& st : job.stages) {
      if (st.tp != job.stages.front().tp) return 1;
      // Experts folded over the tensor-parallel ranks exchange between ranks of one replica.
      if (st.etp > 0 && st.etp != st.tp) return 1;
      block = std::gcd(block, st.tp);
    }
  }
  // The largest divisor of that common divisor that fits every island.
  const int common = std::max(block, 1);
  for (int candidate = common; candidate > 1; --candidate) {
    if (common % candidate != 0) continue;
    bool fits = true;
    for (const TwinInput& job : jobs)
      for (const TwinIsland& ti : job.islands) fits = fits && block_fits(ti, candidate);
    if (fits) return candidate;
  }
  return 1;
}

struct IslandLayout {
  int first_link = 0;  // NIC units: nodes * units * 2, then intra: blocks * 2, then cross
                       // groups: nodes * groups * 2, then uplinks: leaves * 2 (up, down pairs)
  int groups = 1;      // fast groups per node
  int leaves = 1;
  int block = 1;       // chips per host
  int blocks_per_node = 1;
  // A node's NIC links: one per block, of its NICs together, when each block owns whole NICs;
  // else one per NIC, shared by the blocks among its chips.
  int units = 1;
  int nics_per_unit = 1;
  std::vector<sg4::Host*> hosts;  // per block

  int unit_of(const TwinIsland& ti, int local_block) const {
    return units == blocks_per_node ? local_block : local_block * block * ti.nics / ti.chips_per_node;
  }
  int nic_link(int node, int unit, bool down) const {
    return first_link + (node * units + unit) * 2 + (down ? 1 : 0);
  }
  int intra_link(const TwinIsland& ti, int block_index, bool down) const {
    return first_link + ti.nodes * units * 2 + block_index * 2 + (down ? 1 : 0);
  }
  int cross_link(const TwinIsland& ti, int node, int group, bool down) const {
    return first_link + ti.nodes * units * 2 + ti.nodes * blocks_per_node * 2 +
           (node * groups + group) * 2 + (down ? 1 : 0);
  }
  int uplink(const TwinIsland& ti, int leaf, bool down) const {
    return first_link + ti.nodes * units * 2 + ti.nodes * blocks_per_node * 2 +
           ti.nodes * groups * 2 + leaf * 2 + (down ? 1 : 0);
  }
};

// The gradient exchange's endpoints (docs/twin.md#replica-groups): lane k of group g is the
// k-th node that group g's stages use, on its island; every group has `lanes` of them.
struct ExchangeLanes {
  std::vector<int> island;              // per group, an index into the platform's islands
  std::vector<std::vector<int>> nodes;  // per group, its first `lanes` nodes in order
  int lanes = 0;
};

ExchangeLanes exchange_lanes(const std::vector<TwinInput>& jobs) {
  ExchangeLanes out;
  out.lanes = std::numeric_limits<int>::max();
  for (const TwinInput& job : jobs) {
    const TwinStage& first = job.stages.front();
    const int cpn = job.islands[static_cast<std::size_t>(first.island)].chips_per_node;
    std::set<int> nodes;
    for (const TwinStage& st : job.stages) {
      for (int chip = st.first_chip; chip < st.first_chip + st.tp * st.dp; chip += cpn)
        nodes.insert(chip / cpn);
      nodes.insert((st.first_chip + st.tp * st.dp - 1) / cpn);
    }
    out.island.push_back(first.island);
    out.nodes.emplace_back(nodes.begin(), nodes.end());
    out.lanes = std::min(out.lanes, static_cast<int>(nodes.size()));
  }
  for (auto& nodes : out.nodes) nodes.resize(static_cast<std::size_t>(out.lanes));
  return out;
}

class Platform {
 public:
  // The fabric of `in` (its islands, zone links and spines); `jobs` jobs' traffic is told apart.
  // With `exchange`, also the gradient paths between the jobs (replica groups) and their ports.
  // `block` chips act as one host (chip_block).
  explicit Platform(const TwinInput& in, int block, int jobs = 1,
                    const TwinGradientExchange* exchange = nullptr,
                    const ExchangeLanes* lanes = nullptr)
      : in_(in), jobs_(jobs), block_(block), exchange_(exchange), lanes_(lanes) {
    build();
  }

  int block() const { return block_; }
  sg4::Host* host(int island, int chip) const {
    return layout_[static_cast<std::size_t>(island)].hosts[static_cast<std::size_t>(chip / block_)];
  }
  bool same_node(int island_a, int chip_a, int island_b, int chip_b) const {
    const int cpn = in_.islands[static_cast<std::size_t>(island_a)].chips_per_node;
    return island_a == island_b && chip_a / cpn == chip_b / cpn;
  }

  // Adds `bytes` of job `job` to every link on the route from one chip to another.
  void account(int job, int island_a, int chip_a, int island_b, int chip_b, double bytes) {
    route_.clear();
    const TwinIsland& a = in_.islands[static_cast<std::size_t>(island_a)];
    const TwinIsland& b = in_.islands[static_cast<std::size_t>(island_b)];
    const IslandLayout& la = layout_[static_cast<std::size_t>(island_a)];
    const IslandLayout& lb = layout_[static_cast<std::size_t>(island_b)];
    const int node_a = chip_a / a.chips_per_node;
    const int node_b = chip_b / b.chips_per_node;
    const int local_a = chip_a % a.chips_per_node;
    const int local_b = chip_b % b.chips_per_node;
    if (island_a == island_b && node_a == node_b) {
      route_.push_back(la.intra_link(a, chip_a / block_, false));
      const int group_a = local_a / a.intra_group;
      const int group_b = local_b / a.intra_group;
      if (group_a != group_b) {
        route_.push_back(la.cross_link(a, node_a, group_a, false));
        route_.push_back(la.cross_link(a, node_a, group_b, true));
      }
      route_.push_back(la.intra_link(a, chip_b / block_, true));
    } else {
      route_.push_back(la.nic_link(node_a, la.unit_of(a, local_a / block_), false));
      const int leaf_a = node_a / a.nodes_per_leaf;
      const int leaf_b = node_b / b.nodes_per_leaf;
      if (island_a != island_b || leaf_a != leaf_b) {
        route_.push_back(la.uplink(a, leaf_a, false));
        push_fabric_tiers(route_, island_a, island_b);
        route_.push_back(lb.uplink(b, leaf_b, true));
      }
      route_.push_back(lb.nic_link(node_b, lb.unit_of(b, local_b / block_), true));
    }
    if (!counting_) return;
    for (int link : route_) {
      LinkInfo& info = links_[static_cast<std::size_t>(link)];
      info.bytes += bytes;
      if (jobs_ > 1) info.job_bytes[static_cast<std::size_t>(job)] += bytes;
    }
  }

  const std::vector<LinkInfo>& links() const { return links_; }
  // Flows from now on are left out of the link loads.
  void stop_counting() { counting_ = false; }

  // One flow of the gradient exchange: lane `lane` of group `from` to the same lane of group
  // `to` over path `path`, carrying `bytes`. Its bytes count apart, in exchange_bytes().
  sg4::CommPtr exchange_flow(int path, int from, int to, int lane, double bytes) {
    for (int link : exchange_route(path, from, to, lane))
      exchange_bytes_[static_cast<std::size_t>(link)] += bytes;
    const auto& hosts = exchange_hosts_[static_cast<std::size_t>(lane)];
    return sg4::Comm::sendto_async(hosts[static_cast<std::size_t>(from)],
                                   hosts[static_cast<std::size_t>(to)], payload(bytes));
  }
  // The links with the exchange's bytes in place of the step's.
  std::vector<LinkInfo> exchange_links() const {
    std::vector<LinkInfo> out = links_;
    for (std::size_t i = 0; i < out.size(); ++i) out[i].bytes = exchange_bytes_[i];
    return out;
  }

 private:
  // The report entries between the leaves of islands a and b: into a's zone's spine, the zone
  // link when the zones differ, out of b's zone's spine (each where there is one).
  void push_fabric_tiers(std::vector<int>& route, int island_a, int island_b) const {
    const std::size_t a = static_cast<std::size_t>(island_a);
    const std::size_t b = static_cast<std::size_t>(island_b);
    if (island_spine_[a] >= 0) route.push_back(island_spine_[a]);
    const int zone_link = island_zone_link_[a * in_.islands.size() + b];
    if (zone_link == kNoZoneLink) throw std::out_of_range("no zone link between the islands");
    if (zone_link >= 0) route.push_back(zone_link);
    if (island_spine_[b] >= 0) route.push_back(island_spine_[b] + 1);
  }

  // Per island its zone's spine entry (-1: no limiting spine), and per pair of islands the
  // zone link's entry (-1: one zone), so that a flow's route compares no zone names.
  void index_fabric_tiers() {
    const std::size_t n = in_.islands.size();
    island_spine_.assign(n, -1);
    island_zone_link_.assign(n * n, -1);
    for (std::size_t i = 0; i < n; ++i) {
      const std::string& zone = in_.islands[i].zone;
      if (const auto spine = spine_links_.find(zone); spine != spine_links_.end())
        island_spine_[i] = spine->second;
      for (std::size_t j = 0; j < n; ++j) {
        if (in_.islands[j].zone == zone) continue;
        const auto link = zone_links_.find({zone, in_.islands[j].zone});
        island_zone_link_[i * n + j] = link != zone_links_.end() ? link->second : kNoZoneLink;
      }
    }
  }

  // The report entries a flow of path `path` from group `from` to group `to` crosses on lane
  // `lane`: the sender's port and path link (up), on a device RDMA path the fabric's tiers
  // between the islands, the receiver's path link and port (down).
  std::vector<int> exchange_route(int path, int from, int to, int lane) const {
    const auto g = [](int x) { return static_cast<std::size_t>(x); };
    const TwinGradientPath& p = exchange_->paths[g(path)];
    const int side_from = from == p.group_a ? 0 : 1;
    std::vector<int> route{port_links_[g(from)][g(lane)],
                           path_links_[g(path)][g(side_from)][g(lane)]};
    if (p.fabric) {
      const int ia = lanes_->island[g(from)];
      const int ib = lanes_->island[g(to)];
      const TwinIsland& a = in_.islands[g(ia)];
      const TwinIsland& b = in_.islands[g(ib)];
      route.push_back(layout_[g(ia)].uplink(a, lanes_->nodes[g(from)][g(lane)] / a.nodes_per_leaf, false));
      push_fabric_tiers(route, ia, ib);
      route.push_back(layout_[g(ib)].uplink(b, lanes_->nodes[g(to)][g(lane)] / b.nodes_per_leaf, true));
    }
    route.push_back(path_links_[g(path)][g(1 - side_from)][g(lane)] + 1);
    route.push_back(port_links_[g(to)][g(lane)] + 1);
    return route;
  }

  // The gradient paths (docs/twin.md#replica-groups): for each lane a zone of its own with one
  // host per group (lanes never exchange with each other), each host's port, and for each path
  // a link per end; a device RDMA path's route also crosses the fabric's tiers.
  void build_exchange(sg4::NetZone* root) {
    using Dir = sg4::LinkInRoute::Direction;
    const auto g = [](int x) { return static_cast<std::size_t>(x); };
    const int groups = static_cast<int>(lanes_->island.size());
    std::vector<double> port_speed(g(groups), 0.0);
    for (const TwinGradientPath& p : exchange_->paths) {
      port_speed[g(p.group_a)] = std::max(port_speed[g(p.group_a)], p.speed);
      port_speed[g(p.group_b)] = std::max(port_speed[g(p.group_b)], p.speed);
    }
    auto node_name = [&](int group, int lane) {
      const TwinIsland& ti = in_.islands[g(lanes_->island[g(group)])];
      return ti.name + " node " + std::to_string(lanes_->nodes[g(group)][g(lane)]);
    };
    port_links_.assign(g(groups), std::vector<int>(g(lanes_->lanes), 0));
    path_links_.assign(exchange_->paths.size(),
                       std::array<std::vector<int>, 2>{std::vector<int>(g(lanes_->lanes)),
                                                       std::vector<int>(g(lanes_->lanes))});
    exchange_hosts_.resize(g(lanes_->lanes));
    for (int lane = 0; lane < lanes_->lanes; ++lane) {
      auto* zone = sg4::create_full_zone("gradient paths lane " + std::to_string(lane));
      zone->set_parent(root);
      for (int group = 0; group < groups; ++group) {
        exchange_hosts_[g(lane)].push_back(
            zone->create_host(node_name(group, lane) + " host", 1e12));
        port_links_[g(group)][g(lane)] = static_cast<int>(links_.size());
        duplex(zone, node_name(group, lane) + " gradient port",
               node_name(group, lane) + " gradient port", TwinLinkKind::gradient_path,
               port_speed[g(group)], 0.0);
      }
      for (std::size_t pi = 0; pi < exchange_->paths.size(); ++pi) {
        const TwinGradientPath& p = exchange_->paths[pi];
        for (int side = 0; side < 2; ++side) {
          const int group = side == 0 ? p.group_a : p.group_b;
          const int other = side == 0 ? p.group_b : p.group_a;
          const std::string name = node_name(group, lane) + " path to " +
                                   in_.islands[g(lanes_->island[g(other)])].name;
          path_links_[pi][g(side)][g(lane)] = static_cast<int>(links_.size());
          duplex(zone, name, name, TwinLinkKind::gradient_path, p.speed, 0.0);
        }
        // The route exchange_route accounts, each report entry as its link and direction.
        std::vector<sg4::LinkInRoute> route;
        for (int entry : exchange_route(static_cast<int>(pi), p.group_a, p.group_b, lane))
          route.push_back({link_objects_[g(entry)], entry % 2 == 0 ? Dir::UP : Dir::DOWN});
        zone->add_route(exchange_hosts_[g(lane)][g(p.group_a)]->get_netpoint(),
                        exchange_hosts_[g(lane)][g(p.group_b)]->get_netpoint(), nullptr, nullptr,
                        route, true);
      }
      zone->seal();
    }
  }

  int add_link(std::string name, TwinLinkKind kind, double speed) {
    LinkInfo& info = links_.emplace_back();
    info.name = std::move(name);
    info.kind = kind;
    info.speed = speed;
    info.job_bytes.assign(jobs_ > 1 ? static_cast<std::size_t>(jobs_) : 0, 0.0);
    return static_cast<int>(links_.size()) - 1;
  }
  // A split-duplex SimGrid link and its two report entries (up, then down).
  sg4::Link* duplex(sg4::NetZone* zone, const std::string& name, const std::string& report,
                    TwinLinkKind kind, double speed, double latency) {
    add_link(report + " (up)", kind, speed);
    add_link(report + " (down)", kind, speed);
    sg4::Link* link = zone->create_split_duplex_link(name, speed)->set_latency(latency)->seal();
    link_objects_.insert(link_objects_.end(), 2, link);
    return link;
  }

  // The last link's two report entries as island i's node or leaf link; `tail`: their name
  // after the number, less the direction.
  void place(std::size_t island, int node, int leaf, const std::string& tail) {
    for (std::size_t e = links_.size() - 2; e < links_.size(); ++e) {
      LinkInfo& info = links_[e];
      info.island = static_cast<int>(island);
      info.node = node;
      info.leaf = leaf;
      info.tail = tail + (e % 2 == 0 ? " (up)" : " (down)");
    }
  }

  // From a leaf group into its zone: the leaf's uplinks, then the spine when it limits.
  static std::vector<sg4::LinkInRoute> route_to_spine(sg4::Link* uplink, sg4::Link* spine) {
    std::vector<sg4::LinkInRoute> route{{uplink, sg4::LinkInRoute::Direction::UP}};
    if (spine) route.emplace_back(spine, sg4::LinkInRoute::Direction::UP);
    return route;
  }

  // A zone's gateway: a router alone in a child zone. SimGrid resolves routes between sibling
  // zones only, so a gateway placed directly in the zone could not be reached from the hosts
  // nested below it.
  static simgrid::kernel::routing::NetPoint* gateway_zone(sg4::NetZone* parent,
                                                          const std::string& name) {
    auto* zone = sg4::create_full_zone(name + " zone");
    zone->set_parent(parent);
    auto* router = zone->create_router(name);
    zone->seal();
    parent->add_route(zone->get_netpoint(), nullptr, router, nullptr, {}, true);
    return router;
  }

  void build() {
    using Dir = sg4::LinkInRoute::Direction;
    // Switches are not links: a link shared by every flow through a switch would tie all those
    // flows into one sharing problem, which SimGrid then solves again whenever any of them
    // starts or ends. Their latency rides on the cables: a route between nodes crosses two NIC
    // cables and one leaf switch (half a switch each), one between leaves also two uplinks,
    // the other leaf switch and the spine (one switch each), and one between zones also the
    // second spine (on the zone link).
    const double nic_latency = in_.link_latency + in_.switch_latency / 2;
    const double uplink_latency = in_.link_latency + in_.switch_latency;
    auto* root = sg4::create_full_zone("fabric");
    struct FabricZone {
      sg4::NetZone* zone = nullptr;
      simgrid::kernel::routing::NetPoint* spine = nullptr;  // its gateway
      sg4::Link* spine_switch = nullptr;  // only when it limits
    };
    std::map<std::string, FabricZone> zones;
    for (const TwinIsland& ti : in_.islands) {
      if (zones.count(ti.zone)) continue;
      FabricZone& fz = zones[ti.zone];
      fz.zone = sg4::create_star_zone("zone " + ti.zone);
      fz.zone->set_parent(root);
      fz.spine = gateway_zone(fz.zone, "zone " + ti.zone + " spine");
      const auto spine = std::find_if(in_.spines.begin(), in_.spines.end(),
                                      [&](const TwinSpine& sp) { return sp.zone == ti.zone; });
      if (spine != in_.spines.end()) {
        // A limiting spine: into it from the leaves (up) and out of it to them (down), each at
        // the tier's capacity; a flow between two leaves of the zone crosses each once. Its
        // latency is in the uplinks'.
        spine_links_[ti.zone] = static_cast<int>(links_.size());
        fz.spine_switch = duplex(fz.zone, "zone " + ti.zone + " spine switch",
                                 "zone " + ti.zone + " spine", TwinLinkKind::spine, spine->speed,
                                 0.0);
      }
    }
    // Every island's links first, in its fabric zone (their report entries in layout order),
    // before any leaf or node zone exists: SimGrid checks each new link's name against every
    // zone, so a link made after thousands of node zones would cost a walk over all of them.
    layout_.resize(in_.islands.size());
    struct IslandLinks {
      std::vector<sg4::Link*> nic, intra, cross, uplinks;
    };
    std::vector<IslandLinks> island_links(in_.islands.size());
    for (std::size_t i = 0; i < in_.islands.size(); ++i) {
      const TwinIsland& ti = in_.islands[i];
      IslandLayout& lay = layout_[i];
      lay.first_link = static_cast<int>(links_.size());
      lay.groups = (ti.chips_per_node + ti.intra_group - 1) / ti.intra_group;
      lay.leaves = (ti.nodes + ti.nodes_per_leaf - 1) / ti.nodes_per_leaf;
      lay.block = block_;
      lay.blocks_per_node = ti.chips_per_node / block_;
      const bool own_nics = (ti.nics * block_) % ti.chips_per_node == 0;
      lay.units = own_nics ? lay.blocks_per_node : ti.nics;
      lay.nics_per_unit = own_nics ? ti.nics * block_ / ti.chips_per_node : 1;
      sg4::NetZone* zone = zones[ti.zone].zone;
      auto& [nic_links, intra_links, cross_links, uplinks] = island_links[i];
      // A range of a node's NICs or chips as the report names it: "nic 3", "nics 0-3".
      auto range = [](const std::string& one, int first, int count) {
        return count == 1 ? one + " " + std::to_string(first)
                          : one + "s " + std::to_string(first) + "-" +
                                std::to_string(first + count - 1);
      };
      for (int node = 0; node < ti.nodes; ++node) {
        for (int unit = 0; unit < lay.units; ++unit) {
          nic_links.push_back(
              duplex(zone, ti.name + " n" + std::to_string(node) + " nic" + std::to_string(unit),
                     ti.name + " node " + std::to_string(node) + " " +
                         range("nic", unit * lay.nics_per_unit, lay.nics_per_unit),
                     TwinLinkKind::nic, ti.nic_speed * lay.nics_per_unit, nic_latency));
          place(i, node, -1, " " + range("nic", unit * lay.nics_per_unit, lay.nics_per_unit));
        }
      }
      for (int b = 0; b < ti.nodes * lay.blocks_per_node; ++b) {
        const int node = b / lay.blocks_per_node;
        intra_links.push_back(duplex(zone, ti.name + " c" + std::to_string(b * block_) + " intra",
                                     ti.name + " node " + std::to_string(node) + " " +
                                         range("chip", (b % lay.blocks_per_node) * block_, block_) +
                                         " intra",
                                     TwinLinkKind::intra, ti.intra_speed * block_, 0.0));
        place(i, node, -1,
              " " + range("chip", (b % lay.blocks_per_node) * block_, block_) + " intra");
      }
      for (int node = 0; node < ti.nodes; ++node) {
        for (int group = 0; group < lay.groups; ++group) {
          cross_links.push_back(
              duplex(zone, ti.name + " n" + std::to_string(node) + " g" + std::to_string(group),
                     ti.name + " node " + std::to_string(node) + " group " + std::to_string(group),
                     TwinLinkKind::cross_group, ti.cross_group_speed * ti.intra_group, 0.0));
          place(i, node, -1, " group " + std::to_string(group));
        }
      }
      for (int leaf = 0; leaf < lay.leaves; ++leaf) {
        uplinks.push_back(duplex(zone, ti.name + " leaf" + std::to_string(leaf) + " uplink",
                                 ti.name + " leaf " + std::to_string(leaf) + " uplink",
                                 TwinLinkKind::leaf_uplink, ti.uplink_speed, uplink_latency));
        place(i, -1, leaf, " uplink");
      }
    }
    // Then the zones: each island's leaf groups, and in them its nodes with their blocks of
    // chips and a gateway.
    for (std::size_t i = 0; i < in_.islands.size(); ++i) {
      const TwinIsland& ti = in_.islands[i];
      IslandLayout& lay = layout_[i];
      sg4::NetZone* zone = zones[ti.zone].zone;
      sg4::Link* spine_switch = zones[ti.zone].spine_switch;
      const auto& [nic_links, intra_links, cross_links, uplinks] = island_links[i];
      std::vector<sg4::NetZone*> leaf_zones;
      std::vector<simgrid::kernel::routing::NetPoint*> leaf_routers;
      for (int leaf = 0; leaf < lay.leaves; ++leaf) {
        auto* lz = sg4::create_star_zone(ti.name + " leaf " + std::to_string(leaf));
        lz->set_parent(zone);
        leaf_zones.push_back(lz);
        leaf_routers.push_back(
            gateway_zone(lz, ti.name + " leaf " + std::to_string(leaf) + " router"));
      }
      lay.hosts.reserve(static_cast<std::size_t>(ti.nodes * lay.blocks_per_node));
      for (int leaf = 0; leaf < lay.leaves; ++leaf) {
        auto* lz = leaf_zones[static_cast<std::size_t>(leaf)];
        const int last = std::min(ti.nodes, (leaf + 1) * ti.nodes_per_leaf);
        for (int node = leaf * ti.nodes_per_leaf; node < last; ++node) {
          if (lay.blocks_per_node == 1) {
            // One block per node (tp of a whole node): the host sits in its leaf group, its
            // NIC cable its route to the leaf. A node zone would add nothing to its routes, and
            // sealing each costs SimGrid a walk over every host made before it.
            sg4::Host* host = lz->create_host(ti.name + "/n" + std::to_string(node) + "/c0", 1e12);
            lay.hosts.push_back(host);
            lz->add_route(
                host->get_netpoint(), nullptr, nullptr, nullptr,
                {{nic_links[static_cast<std::size_t>(node * lay.units + lay.unit_of(ti, 0))],
                  Dir::UP}},
                true);
            continue;
          }
          auto* nz = sg4::create_full_zone(ti.name + " node " + std::to_string(node));
          nz->set_parent(lz);
          auto* gateway = nz->create_router(ti.name + " n" + std::to_string(node) + " gw");
          std::vector<sg4::Host*> blocks;
          for (int local = 0; local < lay.blocks_per_node; ++local) {
            blocks.push_back(nz->create_host(ti.name + "/n" + std::to_string(node) + "/c" +
                                                 std::to_string(local * block_),
                                             1e12));
            lay.hosts.push_back(blocks.back());
          }
          for (int x = 0; x < lay.blocks_per_node; ++x) {
            const int bx = node * lay.blocks_per_node + x;
            nz->add_route(blocks[static_cast<std::size_t>(x)]->get_netpoint(), gateway, nullptr,
                          nullptr,
                          {{nic_links[static_cast<std::size_t>(node * lay.units + lay.unit_of(ti, x))],
                            Dir::UP}},
                          true);
            for (int y = x + 1; y < lay.blocks_per_node; ++y) {
              const int by = node * lay.blocks_per_node + y;
              std::vector<sg4::LinkInRoute> route{
                  {intra_links[static_cast<std::size_t>(bx)], Dir::UP}};
              const int gx = x * block_ / ti.intra_group;
              const int gy = y * block_ / ti.intra_group;
              if (gx != gy) {
                route.push_back(
                    {cross_links[static_cast<std::size_t>(node * lay.groups + gx)], Dir::UP});
                route.push_back(
                    {cross_links[static_cast<std::size_t>(node * lay.groups + gy)], Dir::DOWN});
              }
              route.push_back({intra_links[static_cast<std::size_t>(by)], Dir::DOWN});
              nz->add_route(blocks[static_cast<std::size_t>(x)]->get_netpoint(),
                            blocks[static_cast<std::size_t>(y)]->get_netpoint(), nullptr, nullptr,
                            route, true);
            }
          }
          nz->seal();
          lz->add_route(nz->get_netpoint(), nullptr, gateway, nullptr,
                        {}, true);
        }
        lz->seal();
        zone->add_route(lz->get_netpoint(), nullptr, leaf_routers[static_cast<std::size_t>(leaf)],
                        nullptr,
                        route_to_spine(uplinks[static_cast<std::size_t>(leaf)], spine_switch), true);
      }
    }
    for (auto& [name, fz] : zones) fz.zone->seal();

    for (const TwinZoneLink& zl : in_.zone_links) {
      const int up = add_link("zone link " + zl.zone_a + " -> " + zl.zone_b,
                              TwinLinkKind::zone_link, zl.speed);
      add_link("zone link " + zl.zone_b + " -> " + zl.zone_a, TwinLinkKind::zone_link, zl.speed);
      zone_links_[{zl.zone_a, zl.zone_b}] = up;
      zone_links_[{zl.zone_b, zl.zone_a}] = up + 1;
      auto* link = root->create_split_duplex_link("zone link " + zl.zone_a + " " + zl.zone_b,
                                                  zl.speed)
                       ->set_latency(zl.latency + in_.switch_latency)
                       ->seal();
      link_objects_.insert(link_objects_.end(), 2, link);
      const auto& a = zones.at(zl.zone_a);
      const auto& b = zones.at(zl.zone_b);
      root->add_route(a.zone->get_netpoint(), b.zone->get_netpoint(), a.spine, b.spine,
                      {{link, Dir::UP}}, true);
    }
    index_fabric_tiers();
    if (exchange_ && lanes_) build_exchange(root);
    exchange_bytes_.assign(links_.size(), 0.0);
    root->seal();
  }

  const TwinInput& in_;
  int jobs_ = 1;
  int block_ = 1;
  const TwinGradientExchange* exchange_ = nullptr;
  const ExchangeLanes* lanes_ = nullptr;
  std::vector<std::vector<int>> port_links_;  // [group][lane]: report entry (up; down + 1)
  std::vector<std::array<std::vector<int>, 2>> path_links_;  // [path][end][lane]: likewise
  std::vector<std::vector<sg4::Host*>> exchange_hosts_;    // [lane][group]
  std::vector<double> exchange_bytes_;                     // per report entry
  bool counting_ = true;
  std::vector<IslandLayout> layout_;
  // Report entries come in pairs, each link's way up (even index) then down (odd): every link
  // is made by duplex or as a zone link, both of which add two entries.
  std::vector<LinkInfo> links_;
  std::vector<sg4::Link*> link_objects_;  // per report entry: its SimGrid link
  std::map<std::string, int> spine_links_;  // zone -> its spine's report entry (up; down + 1)
  std::map<std::pair<std::string, std::string>, int> zone_links_;
  static constexpr int kNoZoneLink = -2;
  std::vector<int> island_spine_;      // [island] (index_fabric_tiers)
  std::vector<int> island_zone_link_;  // [island a x islands + island b]
  std::vector<int> route_;
};

// The links that `keep` selects, most busy first (busy time: bytes / speed; ties by name), at
// most the ten the reports give.
template <typename Keep>
std::vector<const LinkInfo*> most_loaded(const std::vector<LinkInfo>& links, Keep keep) {
  constexpr std::size_t kReported = 10;
  std::vector<const LinkInfo*> kept;
  for (const LinkInfo& link : links)
    if (keep(link)) kept.push_back(&link);
  std::sort(kept.begin(), kept.end(), [](const LinkInfo* a, const LinkInfo* b) {
    const double ba = a->bytes / a->speed;
    const double bb = b->bytes / b->speed;
    if (ba != bb) return ba > bb;
    return a->name < b->name;
  });
  if (kept.size() > kReported) kept.resize(kReported);
  return kept;
}

// A link's load as the reports give it, its utilisation over `window_s`.
TwinLinkLoad load_of(const LinkInfo& link, double window_s) {
  const double busy = link.bytes / link.speed;
  return {link.name, link.kind, link.bytes, link.speed, busy, window_s > 0 ? busy / window_s : 0};
}

// Flow-level max-min sharing without TCP's bandwidth and latency corrections: links deliver
// their stated speed, and efficiencies are applied by the model (docs/twin.md#network).
void configure() {
  sg4::Engine::set_config("network/model:CM02");
  sg4::Engine::set_config("network/crosstraffic:0");
  sg4::Engine::set_config("network/weight-S:0");
  sg4::Engine::set_config("network/TCP-gamma:0");
  sg4::Engine::set_config("contexts/stack-size:256");
}

// ---------------------------------------------------------------------------------------------
// Variability: a counter-based generator, so that a chip's jitter on an operation depends only
// on (seed, stage, replica, tp rank, operation) and never on the order SimGrid runs actors in.
// ---------------------------------------------------------------------------------------------

double uniform(std::uint64_t key) {  // in (0, 1): the middle of its 2^-53 step
  return unit_interval(mix(key)) + 0.5 / 9007199254740992.0;
}

// A log-normal factor with mean 1 and coefficient of variation `cv`.
double jitter_factor(double cv, std::uint64_t key) {
  if (cv <= 0) return 1.0;
  const double sigma2 = std::log1p(cv * cv);
  const double u1 = uniform(key);
  const double u2 = uniform(key ^ 0x5bd1e9955bd1e995ull);
  const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
  return std::exp(std::sqrt(sigma2) * z - 0.5 * sigma2);
}

// ---------------------------------------------------------------------------------------------
// The step.
// ---------------------------------------------------------------------------------------------

// One stage-boundary crossing of one micro-batch, one direction, one replica. The sender's
// flows start when it is ready (the receiver's buffer is posted in advance, as the frameworks'
// batched send/receive pairs do); the sender waits for them; the receiver waits for the data.
struct Transfer {
  bool done = false;
  double sent_s = 0;  // when the sender started, for the trace
  sg4::Semaphore* waiter = nullptr;  // the receiving actor's, while it waits
};

struct ReplicaAccount {
  TwinBreakdown breakdown;
  double finish_s = 0;
};

// One expert-parallel exchange of one group: its replicas arrive at the same operation of
// their (identical) schedules; the last to arrive runs every flow of the group, and the others
// wait for it to finish.
struct Exchange {
  int arrived = 0;
  double start_s = 0;  // when the last replica arrived and the flows started
  sg4::SemaphorePtr done = sg4::Semaphore::create(0);  // one release per waiting replica
};

// A replica's companion under the combined 1F1B schedule: it runs the all-to-alls of a paired
// forward and backward operation while the replica computes them.
struct ExchangeHelper {
  sg4::SemaphorePtr go = sg4::Semaphore::create(0);    // a pair to exchange
  sg4::SemaphorePtr done = sg4::Semaphore::create(0);  // its exchanges are over
  PipelineOp forward;
  PipelineOp backward;
  double start_s = 0;
  double end_s = 0;
};

struct StageSync {
  std::vector<sg4::SemaphorePtr> ready;  // per chunk, one release per replica
  sg4::SemaphorePtr done;                // one release per replica
  double last_ready_s = 0;               // when the slowest replica became ready (last chunk)
  // The distributed optimizer's all-gather of the updated weights (ZeRO 1 and 2): after every
  // replica's optimizer step (one release each), then one release per replica.
  bool gathers = false;
  sg4::SemaphorePtr optimized;
  sg4::SemaphorePtr gathered;
};

class Step {
 public:
  // Job `job` of the platform's jobs, starting at `start_s`.
  Step(const TwinInput& in, Platform& platform, Timeline* timeline, int job = 0,
       double start_s = 0)
      : in_(in), platform_(platform), timeline_(timeline), job_(job), start_s_(start_s) {
    p_ = static_cast<int>(in.stages.size());
    v_ = in.chunks;
    m_ = in.micro_batches;
    dp_ = in.stages.front().dp;
    full_dp_ = dp_;
    virtual_stages_ = p_ * v_;
    transfers_.resize(static_cast<std::size_t>(dp_) * std::max(0, virtual_stages_ - 1) * 2 *
                      static_cast<std::size_t>(m_));
    wakers_.resize(static_cast<std::size_t>(p_) * dp_);
    orders_.resize(static_cast<std::size_t>(p_));
    last_backward_.assign(static_cast<std::size_t>(p_), std::vector<int>(v_, -1));
    double earlier = 0;  // the earlier stages' first chunks' forward passes
    for (const TwinStage& st : in.stages) {
      forward_hidden_s_.push_back(earlier + st.forward_s);
      earlier += part(st, 0, st.forward_s);
    }
    for (int s = 0; s < p_; ++s) {
      orders_[s] = pipeline_order(s, p_, m_, v_, in.combined ? 1 : 0);
      warmups_.push_back(pipeline_warmup(s, p_, m_, v_, in.combined ? 1 : 0));
      for (int k = 0; k < static_cast<int>(orders_[s].size()); ++k) {
        const PipelineOp& op = orders_[s][static_cast<std::size_t>(k)];
        if (op.pass == Pass::backward) last_backward_[s][op.chunk] = k;
      }
    }
    accounts_.resize(static_cast<std::size_t>(p_ * dp_));
    exchanges_.resize(static_cast<std::size_t>(p_));
    for (int s = 0; s < p_; ++s) {
      const TwinStage& st = in.stages[s];
      if (st.ep < 2 || st.a2a_bytes <= 0 || st.a2a_forward + st.a2a_backward <= 0) continue;
      for (int g = 0; g < dp_ / exchange_replicas(st); ++g)
        exchanges_[s].push_back(std::make_shared<Exchange>());
    }
    helpers_.resize(static_cast<std::size_t>(p_));
    for (int s = 0; s < p_; ++s) {
      if (!paired_exchanges(s)) continue;
      helpers_[s].resize(static_cast<std::size_t>(dp_));
    }
    syncs_.resize(static_cast<std::size_t>(p_));
    for (int s = 0; s < p_; ++s) {
      if (in.stages[s].dp_sync.empty()) continue;
      for (int c = 0; c < v_; ++c) syncs_[s].ready.push_back(sg4::Semaphore::create(0));
      syncs_[s].done = sg4::Semaphore::create(0);
      for (const TwinCollective& c : in.stages[s].dp_sync)
        syncs_[s].gathers |= c.kind == Collective::all_gather;
      if (syncs_[s].gathers) {
        syncs_[s].optimized = sg4::Semaphore::create(0);
        syncs_[s].gathered = sg4::Semaphore::create(0);
      }
    }
    // Stragglers by chip.
    slow_.resize(in.islands.size());
    for (std::size_t i = 0; i < in.islands.size(); ++i)
      slow_[i].assign(static_cast<std::size_t>(in.islands[i].nodes), 1.0);
    for (const TwinStraggler& s : in.stragglers) {
      auto& nodes = slow_[static_cast<std::size_t>(s.island)];
      if (s.node < static_cast<int>(nodes.size()))
        nodes[static_cast<std::size_t>(s.node)] =
            std::max(nodes[static_cast<std::size_t>(s.node)], s.slowdown);
    }
  }

  void launch() {
    for (int s = 0; s < p_; ++s) {
      const TwinStage& st = in_.stages[s];
      for (int d = 0; d < dp_; ++d) {
        sg4::Actor::create("stage" + std::to_string(s) + "-dp" + std::to_string(d),
                           platform_.host(st.island, chip(s, d, 0)),
                           [this, s, d] { run_replica(s, d); });
        // Daemons: they end with the replicas they serve.
        if (paired_exchanges(s))
          sg4::Actor::create("stage" + std::to_string(s) + "-dp" + std::to_string(d) + "-a2a",
                             platform_.host(st.island, chip(s, d, 0)),
                             [this, s, d] { run_helper(s, d); })
              ->daemonize();
      }
      if (!st.dp_sync.empty()) {
        sg4::Actor::create("stage" + std::to_string(s) + "-sync",
                           platform_.host(st.island, chip(s, 0, 0)), [this, s] { run_sync(s); });
      }
    }
  }

  // Called by the last replica to finish, from its actor.
  void on_finish(std::function<void()> done) { done_ = std::move(done); }

  // A folded plan (fold_replicas): its stages have `dp` replicas, of which the step simulates
  // dp_ (two periods); the gradient collectives' bus factors are those of all of them.
  void set_full_dp(int dp) { full_dp_ = dp; }

  // Times from the step's start; `links`: the platform's most loaded links, all jobs' bytes.
  TwinResult result(const TwinInput& in, bool links = true) const {
    auto finish = [&](int i) { return accounts_[static_cast<std::size_t>(i)].finish_s - start_s_; };
    TwinResult out;
    out.plan = in.plan;
    out.flows = flows_;
    for (const auto& st : in.stages) {
      out.ranks += static_cast<std::int64_t>(st.tp) * st.dp;
      out.simulated_ranks += static_cast<std::int64_t>(st.tp) * dp_;
    }
    out.stage_finish_s.assign(static_cast<std::size_t>(p_), 0.0);
    out.stage_first_finish_s.assign(static_cast<std::size_t>(p_), 0.0);
    int critical = 0;
    for (int i = 0; i < p_ * dp_; ++i) {
      const auto s = static_cast<std::size_t>(i / dp_);
      out.stage_finish_s[s] = std::max(out.stage_finish_s[s], finish(i));
      out.stage_first_finish_s[s] =
          i % dp_ == 0 ? finish(i) : std::min(out.stage_first_finish_s[s], finish(i));
      if (finish(i) > finish(critical)) critical = i;
    }
    for (int st = 0; st < p_; ++st) {
      int last = st * dp_;
      for (int i = st * dp_; i < (st + 1) * dp_; ++i)
        if (finish(i) > finish(last)) last = i;
      out.stage_breakdown.push_back(accounts_[static_cast<std::size_t>(last)].breakdown);
    }
    out.step_time_s = finish(critical);
    out.breakdown = accounts_[static_cast<std::size_t>(critical)].breakdown;
    out.critical_stage = critical / dp_;
    out.critical_replica = critical % dp_;
    if (out.step_time_s > 0) {
      out.tokens_per_s = in.tokens_per_step / out.step_time_s;
      if (in.peak_flops > 0) out.mfu = in.model_flops_per_step / (out.step_time_s * in.peak_flops);
    }
    if (links) {
      for (const LinkInfo* link :
           most_loaded(platform_.links(), [](const LinkInfo& l) { return l.bytes > 0; }))
        out.links.push_back(load_of(*link, out.step_time_s));
    }
    return out;
  }

 private:
  // Chunk c's part of `total` (stage st's compute, all-to-alls or gradients of all chunks).
  double part(const TwinStage& st, int c, double total) const {
    return st.chunk_share.empty() ? total / v_
                                  : total * st.chunk_share[static_cast<std::size_t>(c)];
  }

  int chip(int s, int d, int j) const {
    const TwinStage& st = in_.stages[s];
    return st.first_chip + d * st.tp + j;
  }
  ReplicaAccount& account(int s, int d) { return accounts_[static_cast<std::size_t>(s * dp_ + d)]; }

  // The transfer across virtual-stage boundary `edge` (between virtual stages edge and
  // edge + 1), `backward` for gradients.
  Transfer& transfer(int d, int edge, bool backward, int mb) {
    const std::size_t index =
        ((static_cast<std::size_t>(d) * (virtual_stages_ - 1) + edge) * 2 + (backward ? 1 : 0)) *
            m_ +
        mb;
    return transfers_[index];
  }

  void record(int s, int d, EventKind kind, int mb, int chunk, double start, double end) {
    if (timeline_ && end > start) timeline_->events.push_back({s, d, kind, mb, chunk, start, end});
  }

  // The compute time of one operation of replica d of stage s: the slowest of its tp chips.
  double slowdown(int s, int d, int op) const {
    const TwinStage& st = in_.stages[s];
    const TwinIsland& ti = in_.islands[static_cast<std::size_t>(st.island)];
    double worst = 0;
    for (int j = 0; j < st.tp; ++j) {
      const int c = chip(s, d, j);
      double factor = slow_[static_cast<std::size_t>(st.island)]
                           [static_cast<std::size_t>(c / ti.chips_per_node)];
      if (in_.jitter > 0) {
        const std::uint64_t key =
            mix(mix(mix(mix(in_.seed) ^ static_cast<std::uint64_t>(s)) ^
                    static_cast<std::uint64_t>(d)) ^
                static_cast<std::uint64_t>(j)) ^
            static_cast<std::uint64_t>(op);
        factor *= jitter_factor(in_.jitter, key);
      }
      worst = std::max(worst, factor);
    }
    return worst;
  }

  void compute(int s, int d, int op_index, const PipelineOp& op) {
    const TwinStage& st = in_.stages[s];
    const bool forward = op.pass == Pass::forward;
    const double base = part(st, op.chunk, forward ? st.forward_s : st.backward_s);
    const double fb = st.forward_s + st.backward_s;
    const double pass_share = fb > 0 ? (forward ? st.forward_s : st.backward_s) / fb : 0.5;
    const double tp = part(st, op.chunk, st.tp_s * pass_share);
    const double factor = slowdown(s, d, op_index);
    const double start = sg4::Engine::get_clock();
    sg4::this_actor::sleep_for(base * factor + tp);
    TwinBreakdown& b = account(s, d).breakdown;
    b.compute_s += base * std::min(factor, 1.0);
    b.stragglers_s += base * std::max(factor - 1.0, 0.0);
    b.tensor_parallel_s += tp;
    record(s, d, forward ? EventKind::forward : EventKind::backward, op.micro_batch, op.chunk,
           start, sg4::Engine::get_clock());
  }

  // Sends one micro-batch's activations (or their gradients) from virtual stage `from` to `to`.
  void send(int d, int from, int to, int mb) {
    const int sa = from % p_;
    const int sb = to % p_;
    const TwinStage& a = in_.stages[sa];
    const TwinStage& b = in_.stages[sb];
    const int flows = std::min(a.tp, b.tp);
    const double bytes = in_.activation_bytes / flows;
    const double start = sg4::Engine::get_clock();
    FlowBatch batch(platform_.block());
    for (int j = 0; j < flows; ++j) {
      const int ca = chip(sa, d, j * (a.tp / flows));
      const int cb = chip(sb, d, j * (b.tp / flows));
      batch.add(a.island, ca, b.island, cb, bytes);
    }
    sg4::Comm::wait_all(issue(batch));
    const double end = sg4::Engine::get_clock();
    TwinBreakdown& br = account(sa, d).breakdown;
    (a.island == b.island ? br.pipeline_s : br.cross_island_s) += end - start;
    record(sa, d, EventKind::send, mb, from / p_, start, end);
    Transfer& t = transfer(d, std::min(from, to), to < from, mb);
    t.done = true;
    t.sent_s = start;
    if (t.waiter) t.waiter->release();
  }

  void receive(int s, int d, int edge, bool backward, int mb, int chunk) {
    Transfer& t = transfer(d, edge, backward, mb);
    if (!t.done) {
      const double start = sg4::Engine::get_clock();
      // One semaphore per replica actor, made at its first wait: it waits for one transfer at
      // a time, and a semaphore per wait cost half a million of them at 65,536 ranks.
      sg4::SemaphorePtr& own = wakers_[static_cast<std::size_t>(s) * dp_ + d];
      if (!own) own = sg4::Semaphore::create(0);
      t.waiter = own.get();
      own->acquire();
      t.waiter = nullptr;
      const double end = sg4::Engine::get_clock();
      account(s, d).breakdown.bubble_s += end - start;
      record(s, d, EventKind::receive_wait, mb, chunk, start, end);
    }
    if (timeline_) {
      const int sender = (backward ? edge + 1 : edge) % p_;
      timeline_->arrows.push_back({sender, s, d, backward, t.sent_s, sg4::Engine::get_clock()});
    }
  }

  // The flows of one round as the platform carries them: one per pair of hosts (chip blocks,
  // chip_block), with the bytes of the chips' flows between them together.
  class FlowBatch {
   public:
    struct Pending {
      int island_a, chip_a, island_b, chip_b;
      double bytes;
    };
    explicit FlowBatch(int block) : block_(block) {}
    void add(int island_a, int chip_a, int island_b, int chip_b, double bytes) {
      if (block_ > 1) {
        // Islands below 2^10, blocks below 2^17 (check_twin_input's limits).
        const std::uint64_t key = (static_cast<std::uint64_t>(island_a) << 44) ^
                                  (static_cast<std::uint64_t>(chip_a / block_) << 27) ^
                                  (static_cast<std::uint64_t>(island_b) << 17) ^
                                  static_cast<std::uint64_t>(chip_b / block_);
        const auto [it, added] = index_.try_emplace(key, flows_.size());
        if (!added) {
          flows_[it->second].bytes += bytes;
          return;
        }
      }
      flows_.push_back({island_a, chip_a, island_b, chip_b, bytes});
    }
    const std::vector<Pending>& flows() const { return flows_; }

   private:
    int block_ = 1;
    std::vector<Pending> flows_;
    std::unordered_map<std::uint64_t, std::size_t> index_;
  };

  std::vector<sg4::CommPtr> issue(const FlowBatch& batch) {
    std::vector<sg4::CommPtr> comms;
    comms.reserve(batch.flows().size());
    for (const FlowBatch::Pending& f : batch.flows())
      comms.push_back(flow(f.island_a, f.chip_a, f.island_b, f.chip_b, f.bytes));
    return comms;
  }

  sg4::CommPtr flow(int island_a, int chip_a, int island_b, int chip_b, double bytes) {
    platform_.account(job_, island_a, chip_a, island_b, chip_b, bytes);
    ++flows_;
    return sg4::Comm::sendto_async(platform_.host(island_a, chip_a),
                                   platform_.host(island_b, chip_b), payload(bytes));
  }

  void run_replica(int s, int d) {
    const TwinStage& st = in_.stages[s];
    const auto& order = orders_[s];
    const bool sync = !st.dp_sync.empty();
    double own_ready = 0;
    // The steady state's operations [w, steady_end) alternate forward and backward.
    const int w = warmups_[s];
    const int steady_end = w + 2 * (static_cast<int>(order.size()) / 2 - w);
    for (int k = 0; k < static_cast<int>(order.size()); ++k) {
      const PipelineOp& op = order[static_cast<std::size_t>(k)];
      const int q = virtual_stage(s, op.chunk, p_);
      if (in_.combined && k >= w && k < steady_end && (k - w) % 2 == 0) {
        run_pair(s, d, k, sync, own_ready);
        ++k;
        continue;
      }
      if (op.pass == Pass::forward) {
        if (q > 0) receive(s, d, q - 1, false, op.micro_batch, op.chunk);
        compute(s, d, k, op);
        all_to_all(s, d, op);
        if (q < virtual_stages_ - 1) send(d, q, q + 1, op.micro_batch);
      } else {
        if (q < virtual_stages_ - 1) receive(s, d, q, true, op.micro_batch, op.chunk);
        const bool last_of_chunk = sync && last_backward_[s][op.chunk] == k;
        if (last_of_chunk && in_.overlap_grad_reduce) {
          own_ready = sg4::Engine::get_clock();
          ready(s, op.chunk);
        }
        compute(s, d, k, op);
        all_to_all(s, d, op);
        if (last_of_chunk && !in_.overlap_grad_reduce) {
          own_ready = sg4::Engine::get_clock();
          ready(s, op.chunk);
        }
        if (q > 0) send(d, q, q - 1, op.micro_batch);
      }
    }
    TwinBreakdown& b = account(s, d).breakdown;
    if (sync) {
      const double start = sg4::Engine::get_clock();
      syncs_[s].done->acquire();
      const double end = sg4::Engine::get_clock();
      const double waited = end - start;
      const double late = std::clamp(syncs_[s].last_ready_s - own_ready, 0.0, waited);
      b.stragglers_s += late;
      b.data_parallel_s += waited - late;
      record(s, d, EventKind::sync_wait, -1, -1, start, end);
    }
    const double start = sg4::Engine::get_clock();
    sg4::this_actor::sleep_for(st.optimizer_s);
    b.optimizer_s += st.optimizer_s;
    const double optimized = sg4::Engine::get_clock();
    record(s, d, EventKind::optimizer, -1, -1, start, optimized);
    double finish = optimized;
    if (sync && syncs_[s].gathers) {
      // The updated weights' all-gather follows the optimizer step. With overlap_param_gather
      // it runs during the next step's first forward pass, which hides as much of it as this
      // stage's forward and the earlier stages' first chunks take (as the estimator counts it).
      syncs_[s].optimized->release();
      syncs_[s].gathered->acquire();
      const double hidden = in_.overlap_param_gather ? forward_hidden_s_[static_cast<std::size_t>(s)] : 0.0;
      finish = std::max(optimized, sg4::Engine::get_clock() - hidden);
      b.data_parallel_s += finish - optimized;
      record(s, d, EventKind::sync_wait, -1, -1, optimized, finish);
    }
    account(s, d).finish_s = finish;
    if (++finished_ == p_ * dp_ && done_) done_();
  }

  // Whether stage s runs the all-to-alls of its paired operations beside their compute.
  bool paired_exchanges(int s) const {
    return in_.combined && in_.stages[s].a2a_overlap > 0 && !exchanges_[s].empty();
  }

  // The combined 1F1B schedule's step: forward operation k beside backward operation k + 1.
  // Both inputs arrive first; the replica computes both passes while its helper runs both
  // operations' exchanges; of the exchanges' time x beside the compute c, at most a2a_overlap x
  // (and at most c) hides: the pair takes c + x - min(a2a_overlap x, c), as the estimator
  // counts it (docs/models/estimator.md#ep-overlap). Both outputs leave after the step.
  void run_pair(int s, int d, int k, bool sync, double& own_ready) {
    const auto& order = orders_[s];
    const PipelineOp& f = order[static_cast<std::size_t>(k)];
    const PipelineOp& b = order[static_cast<std::size_t>(k) + 1];
    const int qf = virtual_stage(s, f.chunk, p_);
    const int qb = virtual_stage(s, b.chunk, p_);
    if (qf > 0) receive(s, d, qf - 1, false, f.micro_batch, f.chunk);
    if (qb < virtual_stages_ - 1) receive(s, d, qb, true, b.micro_batch, b.chunk);
    const bool last_of_chunk = sync && last_backward_[s][b.chunk] == k + 1;
    if (last_of_chunk && in_.overlap_grad_reduce) {
      own_ready = sg4::Engine::get_clock();
      ready(s, b.chunk);
    }
    if (paired_exchanges(s)) {
      ExchangeHelper& helper = helpers_[s][static_cast<std::size_t>(d)];
      helper.forward = f;
      helper.backward = b;
      const double start = sg4::Engine::get_clock();
      helper.go->release();
      compute(s, d, k, f);
      compute(s, d, k + 1, b);
      const double computed = sg4::Engine::get_clock() - start;
      helper.done->acquire();
      const double exchanged = helper.end_s - helper.start_s;
      const double hidden = std::min(in_.stages[s].a2a_overlap * exchanged, computed);
      const double finish = start + computed + exchanged - hidden;
      const double now = sg4::Engine::get_clock();
      if (finish > now) sg4::this_actor::sleep_for(finish - now);
      // What the compute did not hide, after it on the replica's track.
      const double exposed_from = start + computed;
      account(s, d).breakdown.expert_parallel_s += sg4::Engine::get_clock() - exposed_from;
      record(s, d, EventKind::all_to_all, b.micro_batch, b.chunk, exposed_from,
             sg4::Engine::get_clock());
    } else {
      compute(s, d, k, f);
      all_to_all(s, d, f);
      compute(s, d, k + 1, b);
      all_to_all(s, d, b);
    }
    if (last_of_chunk && !in_.overlap_grad_reduce) {
      own_ready = sg4::Engine::get_clock();
      ready(s, b.chunk);
    }
    if (qf < virtual_stages_ - 1) send(d, qf, qf + 1, f.micro_batch);
    if (qb > 0) send(d, qb, qb - 1, b.micro_batch);
  }

  // The helper of replica d of stage s: each pair's exchanges, forward then backward, in the
  // order the group's replicas reach them (the pairs of their identical schedules).
  void run_helper(int s, int d) {
    ExchangeHelper& helper = helpers_[s][static_cast<std::size_t>(d)];
    for (;;) {
      helper.go->acquire();
      helper.start_s = sg4::Engine::get_clock();
      all_to_all(s, d, helper.forward, false);
      all_to_all(s, d, helper.backward, false);
      helper.end_s = sg4::Engine::get_clock();
      helper.done->release();
    }
  }

  // The expert-parallel all-to-alls of one operation (a pass of one micro-batch through one
  // chunk), as one exchange: replica d waits for the others of its group d / ep to reach the
  // same operation, then every replica sends each other one its share of the pass's routed
  // tokens, all at once. The latency terms of the pass's all-to-alls are added analytically.
  // `counted`: the time goes to the replica's breakdown and its trace (a pair's exchanges count
  // only what their compute does not hide, run_pair).
  void all_to_all(int s, int d, const PipelineOp& op, bool counted = true) {
    if (exchanges_[s].empty()) return;
    const TwinStage& st = in_.stages[s];
    const int count = op.pass == Pass::forward ? st.a2a_forward : st.a2a_backward;
    if (count <= 0) return;
    const double per_op = part(st, op.chunk, count);  // all-to-alls in this operation
    const int replicas = exchange_replicas(st);
    std::shared_ptr<Exchange>& current = exchanges_[s][static_cast<std::size_t>(d / replicas)];
    const std::shared_ptr<Exchange> exchange = current;
    const double arrived = sg4::Engine::get_clock();
    if (++exchange->arrived < replicas) {
      exchange->done->acquire();
    } else {
      current = std::make_shared<Exchange>();  // the group's next exchange
      exchange->start_s = arrived;
      sg4::this_actor::sleep_for(per_op * st.a2a_latency_s);
      run_all_to_all(s, d / replicas, per_op);
      for (int k = 1; k < replicas; ++k) exchange->done->release();
    }
    const double end = sg4::Engine::get_clock();
    if (!counted) return;
    TwinBreakdown& b = account(s, d).breakdown;
    b.stragglers_s += exchange->start_s - arrived;
    b.expert_parallel_s += end - exchange->start_s;
    record(s, d, EventKind::expert_wait, op.micro_batch, op.chunk, arrived, exchange->start_s);
    record(s, d, EventKind::all_to_all, op.micro_batch, op.chunk, exchange->start_s, end);
  }

  // The experts' tensor parallelism of a stage: its etp, else its tp.
  static int expert_tp(const TwinStage& st) { return hetplan::expert_tp(st.etp, st.tp); }

  // The flows of `count` all-to-alls of exchange g of stage s (replicas g x R to (g + 1) x R - 1,
  // R = exchange_replicas), carried as `/ efficiency` of the link kind like the collectives'
  // flows, for each expert-parallel group among their ranks (ranks base + e + etp x a, a below
  // ep, of each block of ep x etp ranks; with etp = tp, tensor rank e of ep replicas): every
  // member sends each other one its send buffer's share, or the flex dispatcher's forwarded
  // flows across nodes.
  void run_all_to_all(int s, int g, double count) {
    const TwinStage& st = in_.stages[s];
    const int etp = expert_tp(st);
    const int block = st.ep * etp;
    const int first = g * exchange_replicas(st) * st.tp;
    const int last = first + exchange_replicas(st) * st.tp;
    FlowBatch batch(platform_.block());
    std::vector<int>& members = a2a_members_;
    members.resize(static_cast<std::size_t>(st.ep));
    for (int base = first; base < last; base += block) {
      for (int e = 0; e < etp; ++e) {
        for (int a = 0; a < st.ep; ++a) {
          const int rank = base + e + etp * a;
          members[static_cast<std::size_t>(a)] = chip(s, rank / st.tp, rank % st.tp);
        }
        if (st.a2a_network_bytes > 0)
          add_forwarded_flows(batch, s, members, count);
        else
          add_exchange_flows(batch, s, members, count);
      }
    }
    sg4::Comm::wait_all(issue(batch));
  }

  // One expert-parallel group's chips: each sends `a2a_bytes / ep` to every other one.
  void add_exchange_flows(FlowBatch& batch, int s, const std::vector<int>& members, double count) {
    const TwinStage& st = in_.stages[s];
    const TwinIsland& ti = in_.islands[static_cast<std::size_t>(st.island)];
    const double share = count * st.a2a_bytes / st.ep;
    for (const int from : members) {
      for (const int to : members) {
        if (to == from) continue;
        const bool inside = platform_.same_node(st.island, from, st.island, to);
        const double efficiency = inside ? ti.intra_efficiency : ti.network_efficiency;
        batch.add(st.island, from, st.island, to, share / efficiency);
      }
    }
  }

  // The flex dispatcher across nodes (a2a_network_bytes > 0), one expert-parallel group's chips:
  // each sends a2a_node_bytes shared among the group's other chips on its node and
  // a2a_network_bytes shared among the chips of its index in the group on the other nodes.
  void add_forwarded_flows(FlowBatch& batch, int s, const std::vector<int>& members, double count) {
    const TwinStage& st = in_.stages[s];
    const TwinIsland& ti = in_.islands[static_cast<std::size_t>(st.island)];
    // The group's chips by node: its ranks follow each other on the island's chips.
    std::vector<std::vector<int>> by_node;
    int last_node = -1;
    for (const int c : members) {
      if (c / ti.chips_per_node != last_node) {
        last_node = c / ti.chips_per_node;
        by_node.emplace_back();
      }
      by_node.back().push_back(c);
    }
    const std::size_t nodes = by_node.size();
    const double remote = nodes > 1 ? count * st.a2a_network_bytes /
                                          static_cast<double>(nodes - 1) / ti.network_efficiency
                                    : 0.0;
    for (std::size_t n = 0; n < nodes; ++n) {
      const std::vector<int>& mine = by_node[n];
      const double local = mine.size() > 1
                               ? count * st.a2a_node_bytes / static_cast<double>(mine.size() - 1) /
                                     ti.intra_efficiency
                               : 0.0;
      for (std::size_t i = 0; i < mine.size(); ++i) {
        for (std::size_t o = 0; o < mine.size(); ++o)
          if (o != i) batch.add(st.island, mine[i], st.island, mine[o], local);
        for (std::size_t other = 0; other < nodes; ++other) {
          if (other == n) continue;
          const std::vector<int>& theirs = by_node[other];
          batch.add(st.island, mine[i], st.island, theirs[i % theirs.size()], remote);
        }
      }
    }
  }

  void ready(int s, int chunk) { syncs_[s].ready[static_cast<std::size_t>(chunk)]->release(); }

  // The gradient synchronisation of stage s: each chunk's collectives once every replica has
  // reached that chunk's last backward pass, in the order the chunks get there.
  void run_sync(int s) {
    const TwinStage& st = in_.stages[s];
    std::vector<int> chunks(static_cast<std::size_t>(v_));
    std::iota(chunks.begin(), chunks.end(), 0);
    std::sort(chunks.begin(), chunks.end(),
              [&](int a, int b) { return last_backward_[s][a] < last_backward_[s][b]; });
    for (int c : chunks) {
      for (int d = 0; d < dp_; ++d) syncs_[s].ready[static_cast<std::size_t>(c)]->acquire();
      syncs_[s].last_ready_s = sg4::Engine::get_clock();
      for (const TwinCollective& collective : st.dp_sync) {
        if (collective.kind == Collective::all_gather) continue;  // after the optimizer step
        const double start = sg4::Engine::get_clock();
        sg4::this_actor::sleep_for(collective.latency_s / v_);
        run_collective(s, collective, part(st, c, collective.bytes));
        const EventKind kind = collective.kind == Collective::reduce_scatter ? EventKind::reduce_scatter
                                                                             : EventKind::all_reduce;
        record(s, -1, kind, -1, c, start, sg4::Engine::get_clock());
      }
    }
    for (int d = 0; d < dp_; ++d) syncs_[s].done->release();
    if (!syncs_[s].gathers) return;
    // The updated weights, all chunks at once, once every replica has stepped.
    for (int d = 0; d < dp_; ++d) syncs_[s].optimized->acquire();
    for (const TwinCollective& collective : st.dp_sync) {
      if (collective.kind != Collective::all_gather) continue;
      const double start = sg4::Engine::get_clock();
      sg4::this_actor::sleep_for(collective.latency_s);
      run_collective(s, collective, collective.bytes);
      record(s, -1, EventKind::all_gather, -1, -1, start, sg4::Engine::get_clock());
    }
    for (int d = 0; d < dp_; ++d) syncs_[s].gathered->release();
  }

  struct PlannedFlow {
    int from = 0;
    int to = 0;
    double bytes = 0;  // before the efficiency of the link kind
  };

  // The bandwidth phases of one collective over every data-parallel group of the stage (one
  // per tp rank; for the experts' gradients, one per tp rank and expert-parallel rank), each
  // phase as one round of concurrent flows carrying the algorithm's bytes.
  void run_collective(int s, const TwinCollective& c, double bytes) {
    const TwinStage& st = in_.stages[s];
    const TwinIsland& ti = in_.islands[static_cast<std::size_t>(st.island)];
    // The groups: for the dense parameters tensor rank j of every replica; for the experts' the
    // ranks holding the same experts, every (ep x etp)-th rank from each of the first ep x etp
    // (with etp = tp: tensor rank j of replicas r, r + ep, ...).
    const int etp = c.experts ? expert_tp(st) : st.tp;
    const int stride = c.experts ? st.ep * etp : st.tp;  // ranks apart within a group
    const int n = full_dp_ * st.tp / stride;
    std::vector<std::vector<PlannedFlow>> phases;
    auto ring = [&](std::vector<PlannedFlow>& out, const std::vector<int>& ranks, double each) {
      if (ranks.size() < 2) return;
      for (std::size_t i = 0; i < ranks.size(); ++i)
        out.push_back({ranks[i], ranks[(i + 1) % ranks.size()], each});
    };
    for (int group = 0; group < stride; ++group) {
      // The group's first rank: its etp rank outermost, as the groups were numbered before.
      const int groups_per_rank = stride / etp;
      const int first = group % groups_per_rank * etp + group / groups_per_rank;
      std::vector<int> ranks;
      for (int r = first; r < st.dp * st.tp; r += stride)
        ranks.push_back(chip(s, r / st.tp, r % st.tp));
      if (c.algorithm != CollectiveAlgorithm::hierarchical) {
        if (phases.empty()) phases.resize(1);
        ring(phases[0], ranks, models::bus_factor(c.kind, n) * bytes);
        continue;
      }
      // Hierarchical: inside each node, then across nodes per local rank (rail), then back.
      std::vector<std::vector<int>> by_node;
      for (int r : ranks) {
        const int node = r / ti.chips_per_node;
        if (by_node.empty() || by_node.back().front() / ti.chips_per_node != node)
          by_node.push_back({});
        by_node.back().push_back(r);
      }
      std::size_t local = 0;
      for (const auto& node : by_node) local = std::max(local, node.size());
      // Folded, the group spans full_dp_ / dp_ times the nodes simulated (whole periods).
      const int nodes = static_cast<int>(by_node.size()) * full_dp_ / dp_;
      auto intra = [&](std::vector<PlannedFlow>& out, Collective kind) {
        for (const auto& node : by_node)
          ring(out, node,
               models::bus_factor(kind, static_cast<int>(node.size())) * bytes);
      };
      auto inter = [&](std::vector<PlannedFlow>& out, Collective kind) {
        for (std::size_t l = 0; l < local; ++l) {
          std::vector<int> rail;
          for (const auto& node : by_node)
            if (l < node.size()) rail.push_back(node[l]);
          ring(out, rail, models::bus_factor(kind, nodes) * bytes / static_cast<double>(local));
        }
      };
      if (phases.empty()) phases.resize(3);
      switch (c.kind) {
        case Collective::all_reduce:
          intra(phases[0], Collective::reduce_scatter);
          inter(phases[1], Collective::all_reduce);
          intra(phases[2], Collective::all_gather);
          break;
        case Collective::reduce_scatter:
          intra(phases[0], Collective::reduce_scatter);
          inter(phases[1], Collective::reduce_scatter);
          break;
        default:  // all-gather
          inter(phases[0], Collective::all_gather);
          intra(phases[1], Collective::all_gather);
          break;
      }
    }
    for (const auto& phase : phases) {
      if (phase.empty()) continue;
      FlowBatch batch(platform_.block());
      for (const PlannedFlow& f : phase) {
        const bool inside = platform_.same_node(st.island, f.from, st.island, f.to);
        const double efficiency = inside ? ti.intra_efficiency : ti.network_efficiency;
        batch.add(st.island, f.from, st.island, f.to, f.bytes / efficiency);
      }
      sg4::Comm::wait_all(issue(batch));
    }
  }

  const TwinInput& in_;
  Platform& platform_;
  Timeline* timeline_;
  int job_ = 0;
  double start_s_ = 0;
  int finished_ = 0;  // replicas done
  std::function<void()> done_;
  int p_ = 1, v_ = 1, m_ = 1, dp_ = 1, virtual_stages_ = 1;
  int full_dp_ = 1;  // set_full_dp
  std::vector<Transfer> transfers_;
  std::vector<sg4::SemaphorePtr> wakers_;  // per stage and replica: receive()
  std::vector<std::vector<PipelineOp>> orders_;
  std::vector<std::vector<int>> last_backward_;  // [stage][chunk] index of its last backward
  std::vector<int> warmups_;  // [stage] its warm-up's forward operations (pipeline_warmup)
  std::vector<ReplicaAccount> accounts_;
  std::vector<StageSync> syncs_;
  // Per stage: how much of the weights' all-gather the next step's first forward pass hides
  // under overlap_param_gather.
  std::vector<double> forward_hidden_s_;
  // [stage][expert-parallel group]: the exchange its replicas arrive at next
  std::vector<std::vector<std::shared_ptr<Exchange>>> exchanges_;
  std::vector<int> a2a_members_;  // run_all_to_all's, kept between calls
  // [stage][replica]: the exchange helpers of the combined schedule (paired_exchanges)
  std::vector<std::vector<ExchangeHelper>> helpers_;
  std::vector<std::vector<double>> slow_;  // [island][node] slowdown
  std::int64_t flows_ = 0;
};

}  // namespace

namespace {

// A folded plan's links as the whole plan has them (docs/twin.md#folding): each node's and leaf
// group's links once for every node or leaf group it stands for, the shared tiers' bytes and
// capacity scaled back.
std::vector<LinkInfo> unfolded_links(const std::vector<LinkInfo>& links, const Folding& f,
                                     const TwinInput& plan) {
  std::vector<LinkInfo> out;
  for (const LinkInfo& link : links) {
    if (link.bytes <= 0) continue;
    if (link.island < 0) {
      LinkInfo whole = link;
      whole.bytes *= f.scale();
      whole.speed *= f.scale();
      out.push_back(std::move(whole));
      continue;
    }
    const TwinIsland& ti = plan.islands[static_cast<std::size_t>(link.island)];
    const int per_leaf = ti.nodes_per_leaf;
    // A leaf group's link stands for the leaf groups of its first node's images.
    const int node = link.node >= 0 ? link.node : link.leaf * per_leaf;
    for (const int image : f.images(link.island, node)) {
      LinkInfo copy;
      copy.kind = link.kind;
      copy.speed = link.speed;
      copy.bytes = link.bytes;
      copy.name = link.node >= 0
                      ? ti.name + " node " + std::to_string(image) + link.tail
                      : ti.name + " leaf " + std::to_string(image / per_leaf) + link.tail;
      out.push_back(std::move(copy));
    }
  }
  return out;
}

}  // namespace

TwinResult simulate_step(const TwinInput& input, Timeline* timeline) {
  int argc = 1;
  char name[] = "hetplan-twin";
  char* argv[] = {name, nullptr};
  sg4::Engine engine(&argc, argv);
  configure();
  // A trace shows every replica: folded plans are simulated whole when one is asked for.
  const std::optional<Folding> folding = timeline ? std::nullopt : fold_replicas(input);
  const TwinInput& simulated = folding ? folding->input : input;
  Platform platform(simulated, chip_block({simulated}));
  Step step(simulated, platform, timeline);
  if (folding) step.set_full_dp(folding->full_dp);
  step.launch();
  engine.run();
  if (folding) {
    TwinResult out = step.result(input, false);
    const std::vector<LinkInfo> links = unfolded_links(platform.links(), *folding, input);
    for (const LinkInfo* link : most_loaded(links, [](const LinkInfo&) { return true; }))
      out.links.push_back(load_of(*link, out.step_time_s));
    return out;
  }
  if (timeline) {
    std::stable_sort(timeline->arrows.begin(), timeline->arrows.end(),
                     [](const Arrow& a, const Arrow& b) {
                       if (a.to_stage != b.to_stage) return a.to_stage < b.to_stage;
                       if (a.replica != b.replica) return a.replica < b.replica;
                       return a.taken_s < b.taken_s;
                     });
    std::stable_sort(timeline->events.begin(), timeline->events.end(),
                     [](const Event& a, const Event& b) {
                       if (a.stage != b.stage) return a.stage < b.stage;
                       if (a.replica != b.replica) return a.replica < b.replica;
                       return a.start_s < b.start_s;
                     });
  }
  return step.result(input);
}

namespace {

// The gradient exchange between replica groups, from the actor of the last group to finish
// (docs/twin.md#replica-groups): the latency terms, then a ring's one round of flows from each
// group to the next, or a parameter server's push and pull.
TwinExchangeResult run_exchange(Platform& platform, const TwinGradientExchange& exchange,
                                const ExchangeLanes& lanes) {
  TwinExchangeResult out;
  out.start_s = sg4::Engine::get_clock();
  const int groups = static_cast<int>(lanes.island.size());
  double alpha = 0;
  for (const TwinGradientPath& p : exchange.paths) alpha = std::max(alpha, p.latency);
  const double share = exchange.bytes / lanes.lanes;
  auto path_of = [&](int a, int b) {
    for (std::size_t p = 0; p < exchange.paths.size(); ++p) {
      if (std::minmax(exchange.paths[p].group_a, exchange.paths[p].group_b) == std::minmax(a, b))
        return static_cast<int>(p);
    }
    return -1;  // check_twin_pool makes sure every pair the algorithm needs has a path
  };
  auto round = [&](const std::vector<std::pair<int, int>>& edges, double bytes) {
    std::vector<sg4::CommPtr> comms;
    for (const auto& [from, to] : edges) {
      const int path = path_of(from, to);
      for (int lane = 0; lane < lanes.lanes; ++lane) {
        comms.push_back(platform.exchange_flow(path, from, to, lane, bytes));
        ++out.flows;
      }
    }
    sg4::Comm::wait_all(comms);
  };
  std::vector<std::pair<int, int>> edges;
  if (!exchange.parameter_server) {
    sg4::this_actor::sleep_for(2.0 * (groups - 1) * alpha);
    for (int g = 0; g < groups; ++g) edges.emplace_back(g, (g + 1) % groups);
    round(edges, 2.0 * (groups - 1) / groups * share);
  } else {
    sg4::this_actor::sleep_for(2.0 * alpha);
    for (int g = 0; g < groups; ++g)
      if (g != exchange.server) edges.emplace_back(g, exchange.server);
    round(edges, share);  // push
    for (auto& edge : edges) std::swap(edge.first, edge.second);
    round(edges, share);  // pull
  }
  out.end_s = sg4::Engine::get_clock();
  return out;
}

}  // namespace

TwinPoolResult simulate_pool(const TwinPoolInput& pool) {
  const std::vector<TwinInput> jobs = merge_pool(pool);
  int argc = 1;
  char name[] = "hetplan-twin";
  char* argv[] = {name, nullptr};
  sg4::Engine engine(&argc, argv);
  configure();
  const int count = static_cast<int>(jobs.size());
  // Replica groups exchanging gradients: each runs one step, then the exchange.
  std::optional<ExchangeLanes> lanes;
  if (pool.exchange) lanes = exchange_lanes(jobs);
  Platform platform(jobs.front(), chip_block(jobs), count, pool.exchange ? &*pool.exchange : nullptr,
                    lanes ? &*lanes : nullptr);
  std::optional<TwinExchangeResult> exchanged;
  // Each job's steps, one after another; a job starts its next step while another job has not
  // finished its first.
  std::vector<std::vector<std::unique_ptr<Step>>> steps(jobs.size());
  std::vector<std::vector<double>> ends(jobs.size());  // when each step's last replica ended
  int pending = count;  // jobs still in their first step
  std::function<void(int)> start = [&](int j) {
    const auto index = static_cast<std::size_t>(j);
    steps[index].push_back(std::make_unique<Step>(jobs[index], platform, nullptr, j,
                                                  sg4::Engine::get_clock()));
    Step& step = *steps[index].back();
    step.on_finish([&, j, index] {
      ends[index].push_back(sg4::Engine::get_clock());
      if (ends[index].size() == 1 && --pending == 0) {
        platform.stop_counting();
        if (pool.exchange) exchanged = run_exchange(platform, *pool.exchange, *lanes);
      }
      if (!pool.exchange && pending > 0 && static_cast<int>(steps[index].size()) < pool.max_steps)
        start(j);
    });
    step.launch();
  };
  for (int j = 0; j < count; ++j) start(j);
  engine.run();

  TwinPoolResult out;
  for (const auto& mine : ends) out.window_s = std::max(out.window_s, mine.front());
  for (int j = 0; j < count; ++j) {
    const auto index = static_cast<std::size_t>(j);
    double sum = 0;
    int inside = 0;
    for (std::size_t k = 0; k < steps[index].size(); ++k) {
      const TwinResult r = steps[index][k]->result(jobs[index], false);
      if (k == 0) out.jobs.push_back(r);
      if (k > 0 && ends[index][k - 1] >= out.window_s) continue;  // started after the window
      sum += r.step_time_s;
      ++inside;
    }
    out.steps.push_back(inside);
    out.mean_step_s.push_back(sum / inside);
  }
  // The links that carried more than one job's bytes.
  auto shared = [](const LinkInfo& link) {
    return std::count_if(link.job_bytes.begin(), link.job_bytes.end(),
                         [](double b) { return b > 0; }) >= 2;
  };
  for (const LinkInfo* link : most_loaded(platform.links(), shared))
    out.links.push_back({load_of(*link, out.window_s), link->job_bytes});
  if (exchanged) {
    const std::vector<LinkInfo> carried = platform.exchange_links();
    for (const LinkInfo* link :
         most_loaded(carried, [](const LinkInfo& l) { return l.bytes > 0; }))
      exchanged->links.push_back(load_of(*link, exchanged->end_s - exchanged->start_s));
    out.exchange = std::move(exchanged);
  }
  return out;
}

}  // namespace hetplan::sim::twin
