// messages: the atoms and message types actors exchange inside one process.
// Uses CAF 0.17's forward-compatible ID-block macros so a port to CAF 0.18+ is mechanical.
#pragma once
#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/atom.hpp>
#include <caf/type_id.hpp>

#include <functional>
#include <future>
#include <memory>

#include "storage/shard_store.hpp"

CAF_BEGIN_TYPE_ID_BLOCK(settee, caf::first_custom_type_id)
CAF_ADD_ATOM(settee, settee, write_atom, "write")
CAF_ADD_ATOM(settee, settee, commit_atom, "commit")
CAF_ADD_ATOM(settee, settee, shutdown_atom, "shutdown")
CAF_END_TYPE_ID_BLOCK(settee)

namespace settee {

// A write in flight. The replica fills in the op's results, syncs, then calls `on_done` (on the
// thread that committed: a scheduler thread, or one that committed in place; it must not block).
// Made only by submit_write (bridge.hpp), whose guard also answers when a replica that dies with
// the write queued drops it, so nobody waits forever.
struct pending_write {
  std::shared_ptr<write_op> op;
  std::function<void()> on_done;
};

}  // namespace settee

// Process-local only (never serialised), hence whitelisted.
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(settee::pending_write)
