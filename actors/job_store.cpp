#include "actors/job_store.hpp"

#include "actors/bridge.hpp"
#include "node/log.hpp"

namespace settee {

status job_store::put(const std::string& id, const json& body) {
  const std::string text = body.dump();
  return write(id, &text);
}

status job_store::remove(const std::string& id) {
  return write(id, nullptr);
}

status job_store::write(const std::string& id, const std::string* body) {
  auto h = file_();
  if (!h) return h.error();
  auto snap = h->store->read();
  if (!snap) return snap.error();
  local_doc d;
  const bool had = snap->local(id, d);
  if (!body && !had) return {};
  auto op = std::make_shared<write_op>();
  op->what = write_op::kind::local;
  op->local = {id, body ? *body : "", body == nullptr, had ? d.rev : 0};
  return write_one(h->writer, op, timeout_);
}

result<std::vector<std::pair<std::string, json>>> job_store::load(const std::string& prefix) const {
  auto h = file_();
  if (!h) return h.error();
  auto snap = h->store->read();
  if (!snap) return snap.error();
  std::vector<std::pair<std::string, json>> out;
  snap->scan_local([&](const local_doc& d) {
    if (d.id.rfind(prefix, 0) != 0) return true;
    auto body = parse_json(d.body);
    if (!body)
      log::error("ignoring unreadable job state " + d.id);
    else
      out.emplace_back(d.id, std::move(*body));
    return true;
  });
  if (!snap->fault()) return snap->fault();
  return out;
}

}  // namespace settee
