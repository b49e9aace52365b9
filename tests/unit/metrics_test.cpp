// node/metrics: histogram buckets and the Prometheus text format.
#include <doctest/doctest.h>

#include "node/metrics.hpp"

using namespace settee;

TEST_CASE("a histogram counts observations by upper bound, cumulatively") {
  metrics::histogram h({1, 5, 10});
  for (double v : {0.5, 1.0, 3.0, 7.0, 50.0}) h.observe(v);
  auto r = h.read();
  CHECK(r.cumulative == std::vector<uint64_t>{2, 3, 4});  // <=1: 0.5 and 1; <=5: +3; <=10: +7
  CHECK(r.count == 5);
  CHECK(r.sum == doctest::Approx(61.5));
}

TEST_CASE("the Prometheus text names, labels and escapes") {
  metrics::registry r;
  for (int i = 0; i < 3; ++i) r.requests_by_method.add("GET");
  r.requests_by_method.add("BREW");  // not a method it counts by name
  r.requests_by_status.add_status(201);
  r.commit_ops.observe(4);
  std::string text =
      metrics::prometheus_text(r,
                               {{"odd", "A label with a quote.", "gauge", true, {{{{"db", "a\"b\\c\nd"}}, 2}}},
                                {"process_open_fds", "Standard name.", "gauge", false, {{{}, 7}}}},
                               {"n2@h"});
  CHECK(text.find("# TYPE settee_http_requests_total counter\nsettee_http_requests_total{method=\"COPY\"} 0\n") !=
        std::string::npos);
  CHECK(text.find("settee_http_requests_total{method=\"GET\"} 3\n") != std::string::npos);
  CHECK(text.find("settee_http_requests_total{method=\"other\"} 1\n") != std::string::npos);
  CHECK(text.find("settee_http_responses_total{status=\"201\"} 1\n") != std::string::npos);
  CHECK(text.find("settee_commit_ops_bucket{le=\"4\"} 1\n") != std::string::npos);
  CHECK(text.find("settee_commit_ops_bucket{le=\"+Inf\"} 1\nsettee_commit_ops_sum 4\nsettee_commit_ops_count 1\n") !=
        std::string::npos);
  CHECK(text.find("settee_odd{db=\"a\\\"b\\\\c\\nd\"} 2\n") != std::string::npos);
  // Standard names stay as they are; every label a counter knows is there at zero, as are the
  // usual status codes and each peer's series.
  CHECK(text.find("# TYPE process_open_fds gauge\nprocess_open_fds 7\n") != std::string::npos);
  CHECK(text.find("settee_http_requests_total{method=\"DELETE\"} 0\n") != std::string::npos);
  CHECK(text.find("settee_http_responses_total{status=\"404\"} 0\n") != std::string::npos);
  CHECK(text.find("settee_http_responses_total{status=\"299\"}") == std::string::npos);
  CHECK(text.find("settee_rpc_calls_total{peer=\"n2@h\"} 0\n") != std::string::npos);
  CHECK(text.find("settee_rpc_duration_seconds_bucket{peer=\"n2@h\",le=\"+Inf\"} 0\n") != std::string::npos);
  CHECK(text.find("settee_rpc_duration_seconds_count{peer=\"n2@h\"} 0\n") != std::string::npos);
}

TEST_CASE("a histogram's min, max and quantiles, interpolated within a bucket") {
  metrics::histogram h({1, 2, 4});
  CHECK(h.read().quantile(0.5) == 0);           // no observations
  for (int i = 0; i < 10; ++i) h.observe(0.5);  // 10 in (0, 1]
  for (int i = 0; i < 10; ++i) h.observe(3);    // 10 in (2, 4]
  h.observe(9);                                 // 1 above the last bound
  auto r = h.read();
  CHECK(r.min == 0.5);
  CHECK(r.max == 9);
  CHECK(r.quantile(0.25) == doctest::Approx(0.525));                    // rank 5.25 of 10 in (0, 1], clamped to min
  CHECK(r.quantile(0.5) == doctest::Approx(2 + 2 * (10.5 - 10) / 10));  // in (2, 4]
  CHECK(r.quantile(1.0) == 9);                                          // the top bucket ends at max
  CHECK(r.quantile(0.01) == 0.5);                                       // never below min
}

TEST_CASE("replication lag: pushed, unreachable, caught up, forgotten") {
  metrics::replication_lag lag;
  const metrics::replication_lag::key a{"db", "00000000-7fffffff", "n2"}, b{"db", "80000000-ffffffff", "n2"};
  lag.update(a, 10, 10);
  lag.update(b, 7, 5);  // two changes came in during the push
  CHECK(lag.read() == std::map<metrics::replication_lag::key, uint64_t>{{a, 0}, {b, 2}});
  lag.update(a, 50, std::nullopt);  // n2 down: it keeps the 10 it confirmed
  CHECK(lag.read().at(a) == 40);
  lag.update(a, 60, 60);
  CHECK(lag.read().at(a) == 0);
  lag.update({"other", "00000000-ffffffff", "n3"}, 3, 0);
  lag.retain("db", {a});  // b's range went away (a split); another database is untouched
  CHECK(lag.read().size() == 2);
  CHECK(lag.read().count(b) == 0);
  lag.retain("other", {});
  CHECK(lag.read().size() == 1);
}

TEST_CASE("histograms by label: one series per label value, the label before le") {
  metrics::registry r;
  r.rpc_seconds.observe("n2@h", 0.002);
  r.rpc_seconds.observe("n2@h", 0.2);
  r.rpc_seconds.observe("n3@h", 7);
  std::string text = metrics::prometheus_text(r, {});
  CHECK(text.find("# TYPE settee_rpc_duration_seconds histogram\n") != std::string::npos);
  CHECK(text.find("settee_rpc_duration_seconds_bucket{peer=\"n2@h\",le=\"0.0025\"} 1\n") != std::string::npos);
  CHECK(text.find("settee_rpc_duration_seconds_bucket{peer=\"n2@h\",le=\"+Inf\"} 2\n") != std::string::npos);
  CHECK(text.find("settee_rpc_duration_seconds_count{peer=\"n2@h\"} 2\n") != std::string::npos);
  CHECK(text.find("settee_rpc_duration_seconds_bucket{peer=\"n3@h\",le=\"5\"} 0\n") != std::string::npos);
  CHECK(text.find("settee_rpc_duration_seconds_sum{peer=\"n3@h\"} 7\n") != std::string::npos);
}
