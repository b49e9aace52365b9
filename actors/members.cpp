#include "actors/members.hpp"

#include "actors/resharder.hpp"

namespace settee {

namespace {

status no_resharding() {
  return {errc::not_implemented, "resharding is not available on this node"};
}

}  // namespace

result<reshard_state> local_member::get_reshard_state() {
  if (!reshard_) return no_resharding();
  return reshard_->run_state();
}

status local_member::set_reshard_state(const reshard_state& s) {
  if (!reshard_) return no_resharding();
  return reshard_->set_state(s.running, s.reason);
}

}  // namespace settee
