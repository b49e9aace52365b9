// Writing a test's documents through a real coordinator: one new document, which must commit.
#pragma once
#include <doctest/doctest.h>

#include <string>

#include "actors/coordinator.hpp"
#include "node/json.hpp"

inline void put_doc(settee::coordinator& coord, const settee::db_meta& db, const std::string& id,
                    const settee::json& body) {
  settee::doc_update u;
  u.id = id;
  u.body = body.dump();
  auto w = coord.update_docs(db, {u});
  REQUIRE(w);
  REQUIRE(w->results.at(0).st);
}
