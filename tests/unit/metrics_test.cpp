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
      metrics::prometheus_text(r, {{"odd", "A label with a quote.", "gauge", {{{{"db", "a\"b\\c\nd"}}, 2}}}});
  CHECK(text.find("# TYPE settee_http_requests_total counter\nsettee_http_requests_total{method=\"GET\"} 3\n") !=
        std::string::npos);
  CHECK(text.find("settee_http_requests_total{method=\"other\"} 1\n") != std::string::npos);
  CHECK(text.find("settee_http_responses_total{status=\"201\"} 1\n") != std::string::npos);
  CHECK(text.find("settee_commit_ops_bucket{le=\"4\"} 1\n") != std::string::npos);
  CHECK(text.find("settee_commit_ops_bucket{le=\"+Inf\"} 1\nsettee_commit_ops_sum 4\nsettee_commit_ops_count 1\n") !=
        std::string::npos);
  CHECK(text.find("settee_odd{db=\"a\\\"b\\\\c\\nd\"} 2\n") != std::string::npos);
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
