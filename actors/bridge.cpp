#include "actors/bridge.hpp"

#include <caf/all.hpp>

#include "actors/messages.hpp"

namespace settee {

status write_all(caf::actor_system& sys, const std::vector<write_request>& requests,
                 std::chrono::milliseconds timeout) {
  caf::scoped_actor self{sys};
  using handle_t = decltype(self->request(caf::actor{}, timeout, write_atom_v, std::shared_ptr<write_op>{}));
  std::vector<handle_t> handles;
  handles.reserve(requests.size());
  for (auto& [actor, op] : requests) handles.push_back(self->request(actor, timeout, write_atom_v, op));
  status st;
  for (auto& h : handles) {
    h.receive([](bool) {},
              [&](caf::error& e) {
                if (e == caf::sec::request_timeout) {
                  st = {errc::timeout, "The request could not be processed in a reasonable amount of time."};
                } else if (st) {
                  st = {errc::internal, "shard replica unavailable: " + sys.render(e)};
                }
              });
  }
  return st;
}

}  // namespace settee
