// Load on a running `hetplan extender` (any build: run two side by side to compare them), from
// this process: C clients over keep-alive connections, each sending R requests alternating a
// filter with the full Node objects of a `kubectl get nodes -o json` file and a prioritize with
// their names. Prints requests/s for each of N runs and their min/median/max, and the errors.
//
//   hetplan_extender_load PORT NODES.json [CLIENTS=4] [REQUESTS=2000] [RUNS=3]
//
// docs/extender.md#figures has the figures and how they were taken.
#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s PORT NODES.json [CLIENTS] [REQUESTS] [RUNS]\n", argv[0]);
    return 2;
  }
  const int port = std::atoi(argv[1]);
  const int clients = argc > 3 ? std::atoi(argv[3]) : 4;
  const long requests = argc > 4 ? std::atol(argv[4]) : 2000;
  const int runs = argc > 5 ? std::atoi(argv[5]) : 3;
  std::ifstream in(argv[2]);
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json nodes;
  try {
    nodes = nlohmann::json::parse(text.str());
  } catch (const std::exception& error) {
    std::fprintf(stderr, "%s: not JSON: %s\n", argv[2], error.what());
    return 2;
  }
  nlohmann::json names = nlohmann::json::array();
  for (const auto& item : nodes["items"]) names.push_back(item["metadata"]["name"]);
  const nlohmann::json pod = {{"metadata", {{"name", "bench"}, {"labels", {{"hetplan.io/island", "x"}}}}}};
  const std::string filter_body =
      nlohmann::json({{"Pod", pod}, {"Nodes", {{"items", nodes["items"]}}}, {"NodeNames", nullptr}}).dump();
  const std::string prioritize_body =
      nlohmann::json({{"Pod", pod}, {"Nodes", nullptr}, {"NodeNames", names}}).dump();
  std::printf("extender load: %d clients x %ld requests, filter %zu B (%zu full nodes) / "
              "prioritize %zu B, alternating\n",
              clients, requests, filter_body.size(), names.size(), prioritize_body.size());

  std::vector<double> rates;
  long errors = 0;
  for (int run = 0; run < runs; ++run) {
    std::atomic<long> failed{0};
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> threads;
    for (int c = 0; c < clients; ++c) {
      threads.emplace_back([&] {
        httplib::Client client("127.0.0.1", port);
        client.set_keep_alive(true);
        client.set_tcp_nodelay(true);
        client.set_read_timeout(30);
        for (long i = 0; i < requests; ++i) {
          const bool is_filter = i % 2 == 0;
          auto result = client.Post(is_filter ? "/hetplan/filter" : "/hetplan/prioritize",
                                    is_filter ? filter_body : prioritize_body, "application/json");
          if (!result || result->status != 200) ++failed;
        }
      });
    }
    for (auto& thread : threads) thread.join();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    rates.push_back(static_cast<double>(clients * requests) / seconds);
    errors += failed;
    std::printf("run %d: %.0f requests/s, %ld errors\n", run + 1, rates.back(), failed.load());
  }
  std::sort(rates.begin(), rates.end());
  std::printf("requests/s min %.0f median %.0f max %.0f; errors %ld\n", rates.front(),
              rates[rates.size() / 2], rates.back(), errors);
  return errors == 0 ? 0 : 1;
}
