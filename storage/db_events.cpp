#include "storage/db_events.hpp"

#include "node/json.hpp"
#include "storage/codec.hpp"

namespace settee {

const char* to_string(db_event_type t) {
  return t == db_event_type::created ? "created" : "deleted";
}

db_state resolve_state(const std::optional<db_state>& before, db_state after) {
  if (!after.alive && after.instance == 0 && before) after.instance = before->instance;
  return after;
}

std::vector<db_step> lifecycle_steps(const std::optional<db_state>& before, db_state after) {
  after = resolve_state(before, after);
  std::vector<db_step> out;
  const bool was_alive = before && before->alive;
  const uint64_t was = before ? before->instance : 0;
  if (was_alive && (!after.alive || after.instance != was)) out.push_back({db_event_type::deleted, was});
  if (after.instance == 0) return out;  // a tombstone naming nothing this copy knew
  if (after.alive) {
    if (!was_alive || after.instance != was) out.push_back({db_event_type::created, after.instance});
  } else if (after.instance != was) {
    // An incarnation that came and went between two changes seen here (a copy that was behind).
    out.push_back({db_event_type::created, after.instance});
    out.push_back({db_event_type::deleted, after.instance});
  }
  return out;
}

uint64_t instance_of_entry(std::string_view body) {
  auto j = parse_json(body);
  if (!j || !j->is_object()) return 0;
  auto it = j->find("created");
  if (it == j->end() || !it->is_number_integer() || it->get<int64_t>() <= 0) return 0;
  return static_cast<uint64_t>(it->get<int64_t>());
}

namespace {
void put_be(std::string& out, uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
uint64_t get_be(std::string_view in, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v = (v << 8) | static_cast<unsigned char>(in[i]);
  return v;
}
}  // namespace

std::string event_key(uint64_t seq, uint32_t index) {
  std::string k = "e";
  put_be(k, seq, 8);
  put_be(k, index, 4);
  return k;
}

std::string state_key(std::string_view name) {
  return "s" + std::string(name);
}

std::string encode_event(const db_event& e) {
  codec::writer w;
  w.byte(static_cast<uint8_t>(e.type));
  w.str(e.db);
  w.varint(e.instance);
  w.varint(e.time_s > 0 ? static_cast<uint64_t>(e.time_s) : 0);
  return std::move(w.data());
}

bool decode_event(std::string_view key, std::string_view value, db_event& out) {
  if (key.size() != 13 || key[0] != 'e') return false;
  out.seq = get_be(key.substr(1), 8);
  out.index = static_cast<uint32_t>(get_be(key.substr(9), 4));
  codec::reader r(value);
  uint8_t type = 0;
  uint64_t time = 0;
  if (!r.byte(type) || !r.str(out.db) || !r.varint(out.instance) || !r.varint(time) || !r.done()) return false;
  if (type != 1 && type != 2) return false;
  out.type = static_cast<db_event_type>(type);
  out.time_s = static_cast<int64_t>(time);
  return true;
}

std::string encode_state(const db_state& s) {
  codec::writer w;
  w.varint(s.instance);
  w.byte(s.alive ? 1 : 0);
  return std::move(w.data());
}

bool decode_state(std::string_view value, db_state& out) {
  codec::reader r(value);
  uint8_t alive = 0;
  if (!r.varint(out.instance) || !r.byte(alive) || !r.done() || alive > 1) return false;
  out.alive = alive == 1;
  return true;
}

}  // namespace settee
