// db_events: databases' lifecycle as the catalog shard (`_dbs`) records it, for `_db_updates`
// (spec/http_api.md 7 and 11.4). Every commit to `_dbs` that changes which incarnation of a
// database exists appends `created` / `deleted` events to the file's `db_events` sub-database in
// the same transaction (FORMAT.md, "Database events"), so no creation or deletion can be lost
// between the catalog and the feed. The events are keyed by the `_dbs` seq of the change: a feed
// position in `_dbs` is also a position in the events.
//
// This header is the pure part: the state kept per database name, the events between two states,
// and their encodings. shard_store does the I/O.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace settee {

// What `_dbs` said about one name when it last changed. `instance` is the incarnation (its
// creation suffix); 0 = unknown (a tombstone written by release 0.2, which keeps no body).
struct db_state {
  uint64_t instance = 0;
  bool alive = false;
  bool operator==(const db_state& o) const { return instance == o.instance && alive == o.alive; }
};

enum class db_event_type : uint8_t { created = 1, deleted = 2 };
const char* to_string(db_event_type t);

struct db_event {
  uint64_t seq = 0;    // the `_dbs` seq of the change that recorded it
  uint32_t index = 0;  // its place among the events of that change
  db_event_type type = db_event_type::created;
  std::string db;
  uint64_t instance = 0;
  int64_t time_s = 0;  // commit time (the injected clock)
};

struct db_step {
  db_event_type type;
  uint64_t instance;
};

// The events that take a name from `before` (nullopt: never seen by this file) to `after`, oldest
// first: at most three (deleted old, created new, deleted new when a whole incarnation passed
// between two changes this copy saw). A tombstone of unknown instance deletes the live one.
std::vector<db_step> lifecycle_steps(const std::optional<db_state>& before, db_state after);

// `after` with an unknown tombstone instance filled from `before` (what is stored as the new state).
db_state resolve_state(const std::optional<db_state>& before, db_state after);

// The instance named by a `_dbs` entry's body ({"created":N,...}); 0 when it names none.
uint64_t instance_of_entry(std::string_view body);

// Encodings (FORMAT.md). Keys: "e" + seq (8 bytes big-endian) + index (4 bytes big-endian);
// "s" + name; "m" (the update seq the state table is valid for).
std::string event_key(uint64_t seq, uint32_t index);
std::string state_key(std::string_view name);
std::string encode_event(const db_event& e);
// Decodes the value of `key`; false for a malformed key or value.
bool decode_event(std::string_view key, std::string_view value, db_event& out);
std::string encode_state(const db_state& s);
bool decode_state(std::string_view value, db_state& out);

}  // namespace settee
