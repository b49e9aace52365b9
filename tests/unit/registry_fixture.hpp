// Shard replica actors over real LMDB files in a temporary directory: an actor system, a manual
// clock and a shard registry, for unit tests of what sits on top of the registry.
#pragma once
#include <caf/all.hpp>

#include "actors/shard_registry.hpp"
#include "temp_dir.hpp"

struct registry_fixture {
  static settee::store_options small_files() {
    settee::store_options o;
    o.map_size_bytes = 64ull << 20;
    return o;
  }

  temp_dir dir;
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
  settee::manual_clock clk{1700000000000};
  settee::store_options opts = small_files();
  settee::shard_registry shards{sys, clk, opts, settee::replica_limits{}, 10};
};
