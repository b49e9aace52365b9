#include "actors/bridge.hpp"

#include <caf/all.hpp>

#include "actors/messages.hpp"
#include "node/check.hpp"

namespace settee {

status write_all(const std::vector<write_request>& requests, std::chrono::milliseconds timeout) {
  SETTEE_DEBUG_CHECK(!on_event_loop_thread());  // the RPC loop must hand a wait for a commit to a pool
  std::vector<std::future<void>> done;
  done.reserve(requests.size());
  for (auto& [actor, op] : requests) {
    pending_write w{op, std::make_shared<std::promise<void>>(), {}};
    done.push_back(w.done->get_future());
    caf::anon_send(actor, write_atom_v, std::move(w));
  }
  auto deadline = std::chrono::steady_clock::now() + timeout;
  status st;
  for (auto& f : done) {
    if (f.wait_until(deadline) != std::future_status::ready) {
      return {errc::timeout, "The request could not be processed in a reasonable amount of time."};
    }
    try {
      f.get();
    } catch (const std::future_error&) {
      st = {errc::internal, "a shard replica stopped before committing the write"};
    }
  }
  return st;
}

status write_one(const caf::actor& replica, const std::shared_ptr<write_op>& op, std::chrono::milliseconds timeout) {
  if (auto st = write_all({{replica, op}}, timeout); !st) return st;
  if (!op->st) return op->st;
  for (auto& r : op->results)
    if (!r.st) return r.st;
  return {};
}

}  // namespace settee
