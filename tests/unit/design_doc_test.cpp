#include <doctest/doctest.h>

#include "http/design_doc.hpp"

using namespace settee;

namespace {

std::string refusal(const char* text) {
  status st = validate_design_doc(json::parse(text));
  REQUIRE_FALSE(st.is_ok());
  CHECK(st.code == errc::invalid_design_doc);
  return st.reason;
}

}  // namespace

TEST_CASE("design documents: what couch_mrview:validate accepts") {
  for (
      const char* good :
      {R"({})", R"({"views":{"v":{"map":"function(doc){emit(doc._id)}","reduce":"_count"},"lib":{"x":"y"}}})",
       R"({"views":{"v":{"map":"f","reduce":"_sum"},"w":{"map":"f","reduce":"_stats"},"z":{"map":"f","reduce":"function(){}"}}})",
       R"({"views":{"v":{"map":"f","reduce":"_approx_count_distinct"}}})",
       R"({"language":"query","views":{"v":{"map":{"fields":{"a":"asc"}},"reduce":"_count"}}})",
       R"({"language":"erlang","views":{"v":{"map":"f","reduce":"_unknown"}}})",
       R"({"filters":{"f":"function(){}"},"updates":{"u":"function(){}"},"shows":{},"lists":{"l":{}}})",
       R"({"options":{"include_design":true,"local_seq":false},"rewrites":[],"validate_doc_update":"f"})",
       R"({"rewrites":"function(){}","other":5})"}) {
    CHECK_MESSAGE(validate_design_doc(json::parse(good)).is_ok(), good);
  }
}

TEST_CASE("design documents: CouchDB's reasons") {
  CHECK(refusal(R"({"views":[]})") == "`views` field must have object type");
  CHECK(refusal(R"({"views":null})") == "`views` field must have object type");
  CHECK(refusal(R"({"views":{"v":"f"}})") == "`views.v` field must have object type");
  CHECK(refusal(R"({"views":{"v":{"map":5}}})") == "`views.v.map` field must have string type");
  CHECK(refusal(R"({"language":"query","views":{"v":{"map":"f"}}})") == "`views.v.map` field must have object type");
  CHECK(refusal(R"({"views":{"v":{"map":"f","reduce":{}}}})") == "`views.v.reduce` field must have string type");
  CHECK(refusal(R"({"views":{"lib":"x"}})") == "`views.lib` field must have object type");
  CHECK(refusal(R"({"views":{"v":{"reduce":"_sum"}}})") == "View `v` must contain map function");
  CHECK(refusal(R"({"views":{"v":{"map":"f","reduce":"_median"}}})") ==
        "`_median` is not a supported reduce function.");
  CHECK(refusal(R"({"filters":[]})") == "`filters` field must have object type");
  CHECK(refusal(R"({"filters":{"f":1}})") == "`filters.f` field must have object or string type");
  CHECK(refusal(R"({"updates":{"u":true}})") == "`updates.u` field must have object or string type");
  CHECK(refusal(R"({"lists":"x"})") == "`lists` field must have object type");
  CHECK(refusal(R"({"shows":{"s":[]}})") == "`shows.s` field must have object or string type");
  CHECK(refusal(R"({"options":[]})") == "`options` field must have object type");
  CHECK(refusal(R"({"options":{"local_seq":"yes"}})") == "`options.local_seq` field must have boolean type");
  CHECK(refusal(R"({"options":{"partitioned":true}})") ==
        "partitioned option cannot be true in a non-partitioned database.");
  CHECK(refusal(R"({"language":5})") == "`language` field must have string type");
  CHECK(refusal(R"({"rewrites":{}})") == "`rewrites` field must have string or array type");
  CHECK(refusal(R"({"validate_doc_update":{}})") == "`validate_doc_update` field must have string type");
}
