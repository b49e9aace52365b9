#include "actors/bridge.hpp"

#include <caf/all.hpp>

#include "actors/gather.hpp"
#include "actors/messages.hpp"
#include "node/clock.hpp"

namespace settee {

namespace {

// Calls `done` once: from the replica after the commit, or from the destructor when the replica
// dropped the message (it stopped) without committing.
struct completion {
  std::shared_ptr<write_op> op;
  std::function<void()> done;
  std::shared_ptr<void> keep;
  bool fired = false;
  void fire() {
    fired = true;
    done();
  }
  ~completion() {
    if (fired) return;
    op->st = status{errc::internal, "a shard replica stopped before committing the write"};
    done();
  }
};

thread_local bool may_commit_here = false;  // commit_here

}  // namespace

commit_here::commit_here() {
  may_commit_here = true;
}
commit_here::~commit_here() {
  may_commit_here = false;
}

void submit_write(const shard_writer& replica, std::shared_ptr<write_op> op, std::function<void()> done,
                  std::shared_ptr<void> keep) {
  auto c = std::make_shared<completion>();
  c->op = op;
  c->done = std::move(done);
  c->keep = std::move(keep);
  pending_write w{std::move(op), [c]() { c->fire(); }};
  c.reset();  // `w` holds the completion: dropped unanswered, it reports the stop
  const bool here = may_commit_here;
  may_commit_here = false;  // the next write of this thread goes to the replica
  if (replica.lane)
    replica.lane->submit(std::move(w), here);
  else
    caf::anon_send(replica.actor, write_atom_v, std::move(w));
}

status write_all(const std::vector<write_request>& requests, std::chrono::milliseconds timeout) {
  gather<bool> g({requests.size()});
  for (size_t k = 0; k < requests.size(); ++k) {
    auto slot = g.slot(0, k);
    submit_write(requests[k].first, requests[k].second, [slot] { slot(true); });
  }
  auto answers = g.take(requests.size(), mono::now() + timeout);
  for (auto& a : answers[0]) {
    if (!a) return {errc::timeout, "The request could not be processed in a reasonable amount of time."};
  }
  return {};
}

status write_one(const shard_writer& replica, const std::shared_ptr<write_op>& op, std::chrono::milliseconds timeout) {
  if (auto st = write_all({{replica, op}}, timeout); !st) return st;
  if (!op->st) return op->st;
  for (auto& r : op->results)
    if (!r.st) return r.st;
  return {};
}

}  // namespace settee
