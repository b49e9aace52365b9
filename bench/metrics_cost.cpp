// What recording a metric costs (docs/BENCHMARKS.md "The cost of metrics"): nanoseconds per
// observation of a histogram keyed by peer (the RPC latency histogram, one per answered call) and
// of a plain histogram (per request, per commit), 5 runs of 2,000,000 each.
//   build/settee_metrics_cost
#include <chrono>
#include <cstdio>

#include "node/metrics.hpp"

namespace {

template <class F>
void runs(const char* what, F observe) {
  for (int run = 0; run < 5; ++run) {
    auto t0 = std::chrono::steady_clock::now();
    constexpr int n = 2000000;
    for (int i = 0; i < n; ++i) observe(i);
    double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / n;
    std::printf("%s: %.1f ns per observation\n", what, ns);
  }
}

}  // namespace

int main() {
  using settee::metrics::histogram;
  using settee::metrics::labelled_histogram;
  const std::vector<double> bounds{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5};
  labelled_histogram by_peer(bounds);
  histogram plain(bounds);
  const char* peers[] = {"n1@10.0.0.11", "n2@10.0.0.12", "n3@10.0.0.13"};
  runs("histogram by peer (rpc_duration_seconds)", [&](int i) { by_peer.observe(peers[i % 3], 0.0003 * (i % 7)); });
  runs("histogram (http_request_duration_seconds)", [&](int i) { plain.observe(0.0003 * (i % 7)); });
}
